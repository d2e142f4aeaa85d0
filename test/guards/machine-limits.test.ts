import { describe, expect, it } from "vitest";
import { z } from "zod";
import { callBudget, denyTools, rateLimit, allowTools } from "../../actors/guards/index.js";
import type { Guard } from "../../actors/guard.js";
import { human, type Message } from "../../actors/messages.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { runAgent } from "../../machines/runner.js";
import type { AgentEmitted } from "../../machines/contract/events.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import { defineTool } from "../../tools/tool.js";

/** A tool that records every call it gets, so a test can prove a call never ran. */
function recordingTool(name: string, onCall: (args: { path: string }) => void = () => undefined) {
  const received: { path: string }[] = [];
  const tool = defineTool({
    name,
    description: `${name} a path`,
    parameters: z.object({ path: z.string() }),
    execute: (args) => {
      received.push(args);
      onCall(args);
      return `${name} ${args.path}: ok`;
    },
  });
  return { tool, received };
}

const toolMessages = (messages: Message[]) => messages.filter((m) => m.role === "tool");

describe("built-in guards inside a run", () => {
  it("a denied call never runs, and the model reads the reason in the tool message", async () => {
    const remove = recordingTool("delete_file");
    const model = scriptedModel([{ toolCalls: [{ id: "call_rm", name: "delete_file", arguments: { path: "/etc" } }] }, { content: "I could not delete it." }]);
    const machine = createReactMachine({ modelClient: model, tools: [remove.tool], constraints: [denyTools(["delete_file"])] });
    const events: AgentEmitted[] = [];
    const output = await runAgent(machine, { messages: [human("delete /etc")] }, { onEvent: (e) => events.push(e) });

    expect(remove.received).toEqual([]);
    expect(output.status).toBe("succeeded");
    const reason = "delete_file may not be used here. Use another tool or answer without it.";
    expect(model.requests[1]!.messages.at(-1)).toEqual({ role: "tool", toolCallId: "call_rm", name: "delete_file", content: `Call denied: ${reason}`, isError: true });
    expect(events.filter((e) => e.type === "tool.call.denied")).toMatchObject([{ callId: "call_rm", name: "delete_file", reason, decision: "denied" }]);
    expect(events.some((e) => e.type === "tool.call.started")).toBe(false);
  });

  it("in a mixed batch only the allowed calls run, and every call gets its answer in order", async () => {
    const read = recordingTool("read_file");
    const write = recordingTool("write_file");
    const model = scriptedModel([
      {
        toolCalls: [
          { id: "w", name: "write_file", arguments: { path: "a" } },
          { id: "r", name: "read_file", arguments: { path: "b" } },
        ],
      },
      { content: "read b" },
    ]);
    const machine = createReactMachine({ modelClient: model, tools: [read.tool, write.tool], constraints: [allowTools(["read_file"])] });
    const output = await runAgent(machine, { messages: [human("go")] });
    expect(write.received).toEqual([]);
    expect(read.received).toEqual([{ path: "b" }]);
    expect(toolMessages(output.messages).map((m) => [m.toolCallId, m.content])).toEqual([
      ["w", "Call denied: write_file is not one of the tools allowed here (read_file). Use one of those or answer without it."],
      ["r", "read_file b: ok"],
    ]);
  });

  it("an async custom guard decides from the arguments and the run state", async () => {
    const remove = recordingTool("delete_file");
    const protectSystem: Guard = async (call, ctx) => {
      await new Promise((resolve) => setTimeout(resolve, 1));
      const messages = ctx.state["messages"] as readonly Message[];
      const path = String(call.args?.["path"] ?? "");
      return path.startsWith("/etc") ? { decision: "deny", reason: `refusing to touch ${path} (asked in turn ${messages.length})` } : { decision: "allow" };
    };
    const model = scriptedModel([
      {
        toolCalls: [
          { id: "a", name: "delete_file", arguments: { path: "/etc/passwd" } },
          { id: "b", name: "delete_file", arguments: { path: "/tmp/x" } },
        ],
      },
      { content: "done" },
    ]);
    const machine = createReactMachine({ modelClient: model, tools: [remove.tool], constraints: [protectSystem] });
    const output = await runAgent(machine, { messages: [human("clean up")] });
    expect(remove.received).toEqual([{ path: "/tmp/x" }]);
    expect(toolMessages(output.messages)[0]).toMatchObject({ toolCallId: "a", content: "Call denied: refusing to touch /etc/passwd (asked in turn 2)" });
  });

  it("a call budget holds across the iterations of one run and inside a batch", async () => {
    const calc = recordingTool("calculator");
    const model = scriptedModel([
      { toolCalls: [{ id: "c1", name: "calculator", arguments: { path: "1" } }] },
      { toolCalls: [{ id: "c2", name: "calculator", arguments: { path: "2" } }] },
      {
        toolCalls: [
          { id: "c3", name: "calculator", arguments: { path: "3" } },
          { id: "c4", name: "calculator", arguments: { path: "4" } },
        ],
      },
      { toolCalls: [{ id: "c5", name: "calculator", arguments: { path: "5" } }] },
      { content: "stopping here" },
    ]);
    const machine = createReactMachine({ modelClient: model, tools: [calc.tool], constraints: [callBudget({ perTool: { calculator: 3 } })] });
    const output = await runAgent(machine, { messages: [human("count")] });

    expect(calc.received.map((a) => a.path)).toEqual(["1", "2", "3"]);
    expect(output.status).toBe("succeeded");
    expect(model.requests).toHaveLength(5);
    const answers = Object.fromEntries(toolMessages(output.messages).map((m) => [m.toolCallId, m.content]));
    expect(answers["c4"]).toBe("Call denied: calculator may be called at most 3 times per run; this would be call 4. Answer with what you have.");
    // Denied calls do not use up budget: the next attempt is still "call 4".
    expect(answers["c5"]).toBe(answers["c4"]);
  });

  it("a rate limit slides over the run's clock: denied while the window is full, allowed once it moves on", async () => {
    let clock = 0;
    const startedAt: number[] = [];
    const search = recordingTool("search", () => {
      startedAt.push(clock);
      clock += 300; // each search takes 300 ms of the run's clock
    });
    const sleep = defineTool({
      name: "sleep",
      description: "wait a while",
      parameters: z.object({ ms: z.number() }),
      execute: ({ ms }) => {
        clock += ms;
        return "slept";
      },
    });
    const model = scriptedModel([
      { toolCalls: [{ id: "s1", name: "search", arguments: { path: "a" } }] },
      { toolCalls: [{ id: "s2", name: "search", arguments: { path: "b" } }] },
      { toolCalls: [{ id: "s3", name: "search", arguments: { path: "c" } }] },
      { toolCalls: [{ id: "z", name: "sleep", arguments: { ms: 500 } }] },
      { toolCalls: [{ id: "s4", name: "search", arguments: { path: "c" } }] },
      { content: "found everything" },
    ]);
    const machine = createReactMachine({
      modelClient: model,
      tools: [search.tool, sleep],
      constraints: [rateLimit({ tool: "search", maxCalls: 2, windowMs: 1_000 })],
      now: () => clock,
    });
    const output = await runAgent(machine, { messages: [human("research")] });

    expect(output.status).toBe("succeeded");
    expect(startedAt).toEqual([0, 300, 1_100]);
    expect(search.received.map((a) => a.path)).toEqual(["a", "b", "c"]);
    const denied = toolMessages(output.messages).find((m) => m.toolCallId === "s3");
    expect(denied?.content).toBe(
      "Call denied: search may be called at most 2 times per 1 s; it was already called 2 times in the last 1 s. " +
        "It can be called again in 400 ms; meanwhile use other tools or answer with what you have.",
    );
  });
});
