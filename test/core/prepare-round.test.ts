import { afterEach, describe, expect, it } from "vitest";
import { createActor, toPromise } from "xstate";
import { z } from "zod";
import { requireApproval } from "../../actors/guards/index.js";
import { human } from "../../actors/messages.js";
import { persistAgent, restoreAgent } from "../../machines/persistence/persistence.js";
import { RoundPlanError, type RoundView } from "../../machines/chart/prepare-round.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { runAgent } from "../../machines/runner.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import { defineTool } from "../../tools/tool.js";
import { callTurn, loopback, textTurn, toolNames, type Loopback } from "../output/helpers.js";

const ran: string[] = [];
const add = defineTool({ name: "add", description: "Add", parameters: z.object({ a: z.number(), b: z.number() }), execute: ({ a, b }) => (ran.push("add"), a + b) });
const lookup = defineTool({ name: "lookup", description: "Look up", parameters: z.object({ key: z.string() }), execute: ({ key }) => (ran.push("lookup"), `value of ${key}`) });
const send = defineTool({ name: "send", description: "Send (needs approval)", parameters: z.object({}), execute: () => (ran.push("send"), "sent") });

const servers: Loopback[] = [];
afterEach(async () => {
  ran.length = 0;
  await Promise.all(servers.splice(0).map((s) => s.server.close()));
});
async function serve(...turns: Parameters<typeof loopback>[0][]) {
  const server = await loopback(turns[0]!);
  servers.push(server);
  return server;
}

/** Round 1: look things up, forced; later: only arithmetic, on another model, briefer, with a seed. */
const plan = (view: RoundView) =>
  view.rounds === 0
    ? { tools: ["lookup"], toolChoice: { type: "function" as const, function: { name: "lookup" } } }
    : { model: "small-model", tools: ["add"], extraParams: { seed: view.rounds }, systemPrompt: "Be brief." };

describe("prepareRound over HTTP", () => {
  it("sets each round's model, tools, tool_choice, extra params and system prompt", async () => {
    const open = await serve([callTurn([{ id: "c1", name: "lookup", arguments: { key: "x" } }]), callTurn([{ id: "c2", name: "add", arguments: { a: 1, b: 2 } }]), textTurn(["3"])]);
    const machine = createReactMachine({ modelClient: open.client, tools: [add, lookup], prepareRound: plan, configFile: false });
    const output = await runAgent(machine, { messages: [human("go")] });
    expect(output.status).toBe("succeeded");
    const [first, second, third] = open.bodies();
    expect(toolNames(first!)).toEqual(["lookup"]);
    expect(first!["tool_choice"]).toEqual({ type: "function", function: { name: "lookup" } });
    expect(first!["model"]).toBe("test-model");
    expect(toolNames(second!)).toEqual(["add"]);
    expect(second!["tool_choice"]).toBeUndefined();
    expect(second!["model"]).toBe("small-model");
    expect(second!["seed"]).toBe(1);
    expect((second!["messages"] as { role: string; content: string }[])[0]!.content).toMatch(/^Be brief\./);
    expect(third!["seed"]).toBe(2);
    expect(ran).toEqual(["lookup", "add"]);
  });

  it("refuses a call of a tool this round did not offer as an unknown tool, even though the agent has it", async () => {
    const open = await serve([callTurn([{ id: "c1", name: "lookup", arguments: { key: "x" } }]), callTurn([{ id: "c2", name: "lookup", arguments: { key: "y" } }]), textTurn(["ok"])]);
    const machine = createReactMachine({ modelClient: open.client, tools: [add, lookup], prepareRound: plan, configFile: false });
    const output = await runAgent(machine, { messages: [human("go")] });
    expect(ran).toEqual(["lookup"]);
    const refused = output.messages.find((m) => m.role === "tool" && m.toolCallId === "c2");
    expect(refused).toMatchObject({ isError: true });
    expect(refused?.content).toMatch(/no tool named "lookup"\. Available tools: add\./);
  });
});

describe("prepareRound: bad plans are clear errors", () => {
  const run = (prepareRound: (view: RoundView) => unknown) =>
    runAgent(createReactMachine({ modelClient: scriptedModel([{ content: "hi" }]), tools: [add], prepareRound: prepareRound as never, configFile: false }), { messages: [human("hi")] });

  it.each([
    [() => ({ tools: ["nope"] }), /prepareRound: tools names "nope", which the agent does not have; choose from: add/],
    [() => ({ temperature: 1 }), /prepareRound: temperature is not a field of a round plan/],
    [() => ({ toolChoice: "sometimes" }), /prepareRound: toolChoice is invalid/],
    [() => ({ extraParams: { at: new Date() } }), /prepareRound: extraParams\.at is invalid/],
    [() => ({ tools: ["add"], toolChoice: { type: "function", function: { name: "other" } } }), /toolChoice forces "other", which this round's tools do not offer/],
    [async () => ({}), /returned a promise; it must be synchronous/],
    [() => {
      throw new Error("boom");
    }, /prepareRound: \(call\) threw: boom/],
  ])("%#: the run rejects with RoundPlanError naming the field", async (prepareRound, message) => {
    const error = await run(prepareRound).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(RoundPlanError);
    expect((error as Error).message).toMatch(message);
  });

  it("a plan of nothing changes nothing", async () => {
    const model = scriptedModel([{ content: "hi" }]);
    const output = await runAgent(createReactMachine({ modelClient: model, tools: [add], prepareRound: () => undefined, configFile: false }), { messages: [human("hi")] });
    expect(output.status).toBe("succeeded");
    expect(model.requests[0]!.tools.map((t) => t.function.name)).toEqual(["add"]);
  });
});

describe("prepareRound after a restore", () => {
  it("a run restored from a snapshot makes the same requests as one that was never interrupted", async () => {
    const turns = () => [
      callTurn([{ id: "c1", name: "send", arguments: {} }]),
      callTurn([{ id: "c2", name: "add", arguments: { a: 2, b: 2 } }]),
      textTurn(["4"]),
    ];
    const byRound = (view: RoundView) => (view.rounds === 0 ? { tools: ["send"] } : { model: `model-${view.rounds}-${view.messages.length}`, tools: ["add"] });
    const make = (open: Loopback) =>
      createReactMachine({ modelClient: open.client, tools: [add, send], constraints: [requireApproval({ tools: ["send"] })], prepareRound: byRound, configFile: false });

    const straight = await serve(turns());
    await runAgent(make(straight), { messages: [human("send, then add")], runId: "r" }, { onApproval: () => ({ approve: true }) });

    const interrupted = await serve(turns());
    const machine = make(interrupted);
    const first = createActor(machine, { input: { messages: [human("send, then add")], runId: "r" } });
    const saved = new Promise<ReturnType<typeof persistAgent>>((resolve) => first.on("guard.approval.requested", () => resolve(persistAgent(first))));
    first.start();
    const record = JSON.parse(JSON.stringify(await saved)) as unknown;
    first.stop();

    const second = createActor(machine, { snapshot: restoreAgent(machine, record) });
    second.start();
    second.send({ type: "guard.approve", callId: "c1" });
    const output = await toPromise(second);
    expect(output.status).toBe("succeeded");

    const strip = (bodies: Record<string, unknown>[]) => bodies.map((b) => ({ model: b["model"], tools: toolNames(b), tool_choice: b["tool_choice"], messages: b["messages"] }));
    expect(strip(interrupted.bodies())).toEqual(strip(straight.bodies()));
    expect(interrupted.bodies()[1]!["model"]).toBe("model-1-3");
  });
});
