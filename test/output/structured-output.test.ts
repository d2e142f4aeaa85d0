import { afterEach, describe, expect, expectTypeOf, it } from "vitest";
import { createActor, toPromise } from "xstate";
import { z } from "zod";
import { human } from "../../actors/messages.js";
import type { AgentOutput } from "../../machines/contract/context.js";
import type { AgentEmitted } from "../../machines/contract/events.js";
import { persistAgent, restoreAgent } from "../../machines/persistence/persistence.js";
import { createReactMachine, MachineOptionsError } from "../../machines/react-machine.js";
import { runAgent } from "../../machines/runner.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import { defineTool } from "../../tools/tool.js";
import { resolveModelClient } from "../../actors/openai/openai-model-client.js";
import { startOpenAIServer, type OpenAIServer } from "../../testing/openai-server.js";
import { responsesTextTurn } from "../../testing/responses-turns.js";
import { callTurn, fragmentedCallTurn, loopback, textTurn, toolNames, type Loopback } from "./helpers.js";

const Weather = z.object({ city: z.string(), temperatureC: z.number(), conditions: z.enum(["sunny", "cloudy", "rain"]) });
const forecast = defineTool({
  name: "forecast",
  description: "Today's forecast for a city",
  parameters: z.object({ city: z.string() }),
  execute: ({ city }) => `${city}: 21°C, sunny`,
});

let open: Loopback | undefined;
afterEach(() => open?.server.close());
const servers: OpenAIServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

function collect() {
  const events: AgentEmitted[] = [];
  return { events, onEvent: (event: AgentEmitted) => events.push(event), of: <T extends AgentEmitted["type"]>(type: T) => events.filter((e): e is Extract<AgentEmitted, { type: T }> => e.type === type) };
}

describe("structured output with the final-result tool (strategy tool)", () => {
  it("offers final_result with the schema, sends a mismatch back naming the field, and returns the typed value", async () => {
    open = await loopback([
      callTurn([{ id: "call_1", name: "forecast", arguments: { city: "Paris" } }]),
      callTurn([{ id: "call_2", name: "final_result", arguments: { city: "Paris", temperatureC: "21", conditions: "sunny" } }]),
      callTurn([{ id: "call_3", name: "final_result", arguments: { city: "Paris", temperatureC: 21, conditions: "sunny" } }]),
    ]);
    const machine = createReactMachine({ modelClient: open.client, tools: [forecast], output: Weather, config: { outputStrategy: "tool" }, configFile: false });
    const log = collect();
    const output = await runAgent(machine, { messages: [human("Weather in Paris?")] }, { onEvent: log.onEvent });

    expect(output.status).toBe("succeeded");
    expect(output.output).toEqual({ city: "Paris", temperatureC: 21, conditions: "sunny" });
    expect(JSON.parse(output.finalAnswer!)).toEqual(output.output);
    // The mismatch cost an iteration: three model calls, two iterations completed before the last.
    expect(output.iterations).toBe(2);
    const bodies = open.bodies();
    expect(bodies).toHaveLength(3);
    for (const body of bodies) expect(toolNames(body)).toEqual(["forecast", "final_result"]);
    const finalTool = (bodies[0]!["tools"] as { function: { name: string; parameters: Record<string, unknown> } }[])[1]!.function;
    expect(finalTool.parameters).toMatchObject({ type: "object", required: ["city", "temperatureC", "conditions"] });
    expect(bodies[0]!["response_format"]).toBeUndefined();
    // The third request carries the observation for the bad final_result call, naming the field.
    const third = bodies[2]!["messages"] as { role: string; tool_call_id?: string; content?: string }[];
    const observation = third.find((m) => m.role === "tool" && m.tool_call_id === "call_2");
    expect(observation?.content).toMatch(/temperatureC: .*expected number/i);
    expect(observation?.content).toMatch(/Call the final_result tool again/);
    const invalid = log.of("output.invalid");
    expect(invalid).toHaveLength(1);
    expect(invalid[0]!.failures).toBe(1);
    // The accepted call is answered too, so the history can go on in a next run.
    expect(output.messages.at(-1)).toMatchObject({ role: "tool", toolCallId: "call_3", content: "Final result accepted." });
  });

  it("streams the final_result arguments as output.partial while they arrive", async () => {
    const args = '{"city":"Lima","temperatureC":19,"conditions":"cloudy"}';
    const delays: string[] = [args.slice(0, 12), args.slice(12, 30), args.slice(30, 45), args.slice(45)];
    open = await loopback([fragmentedCallTurn("call_1", "final_result", delays)]);
    const machine = createReactMachine({ modelClient: open.client, output: Weather, config: { outputStrategy: "tool" }, configFile: false });
    const log = collect();
    const output = await runAgent(machine, { messages: [human("Lima?")] }, { onEvent: log.onEvent });
    expect(output.output).toEqual({ city: "Lima", temperatureC: 19, conditions: "cloudy" });
    const partials = log.of("output.partial").map((e) => e.partial as Record<string, unknown>);
    expect(partials.length).toBeGreaterThanOrEqual(1);
    expect(partials.at(-1)).toEqual(output.output);
    for (const partial of partials) expect(Object.keys(partial).every((key) => key in output.output!)).toBe(true);
    // The raw argument fragments are not telemetry of their own.
    expect(log.events.some((e) => (e.type as string) === "tool.arguments")).toBe(false);
  });

  it("ends Failed with invalidOutput, the last error and the raw text, past config.outputRetries", async () => {
    open = await loopback([
      callTurn([{ id: "call_1", name: "final_result", arguments: "{not json" }]),
      callTurn([{ id: "call_2", name: "final_result", arguments: { city: "Paris", conditions: "snow" } }]),
    ]);
    const machine = createReactMachine({ modelClient: open.client, output: Weather, config: { outputStrategy: "tool", outputRetries: 1 }, configFile: false });
    const output = await runAgent(machine, { messages: [human("Weather?")] });

    expect(output.status).toBe("failed");
    expect(output.output).toBeUndefined();
    expect(output.termination?.reason).toBe("invalidOutput");
    expect(output.termination?.error?.name).toBe("OutputValidationError");
    expect(output.termination?.error?.message).toMatch(/temperatureC/);
    expect(output.termination?.error?.message).toMatch(/conditions/);
    expect(output.termination?.raw).toBe('{"city":"Paris","conditions":"snow"}');
    expect(open.bodies()).toHaveLength(2);
    const second = open.bodies()[1]!["messages"] as { role: string; content?: string }[];
    expect(second.at(-1)?.content).toMatch(/not valid JSON/);
  });

  it("a plain-text reply is checked too, and told to use the tool when it is not the output", async () => {
    open = await loopback([textTurn(["It is sunny in Paris."]), textTurn(['{"city":"Paris","temperatureC":21,"conditions":"sunny"}'])]);
    const machine = createReactMachine({ modelClient: open.client, output: Weather, config: { outputStrategy: "tool" }, configFile: false });
    const output = await runAgent(machine, { messages: [human("Weather?")] });
    expect(output.status).toBe("succeeded");
    expect(output.output?.temperatureC).toBe(21);
    const second = open.bodies()[1]!["messages"] as { role: string; content?: string }[];
    expect(second.at(-1)).toMatchObject({ role: "user" });
    expect(second.at(-1)?.content).toMatch(/not valid JSON.*Call the final_result tool/);
  });
});

describe("structured output with response_format json_schema (strategy native)", () => {
  it("asks for strict json_schema, streams output.partial, and validates the streamed text", async () => {
    const text = '{"city":"Oslo","temperatureC":-3,"conditions":"cloudy"}';
    open = await loopback([textTurn([text.slice(0, 9), text.slice(9, 20), text.slice(20, 40), text.slice(40)])], "gpt-4o-mini");
    // "auto" picks native for a model known to support json_schema.
    const machine = createReactMachine({ modelClient: open.client, output: Weather, config: { model: "gpt-4o-mini" }, configFile: false });
    const log = collect();
    const output = await runAgent(machine, { messages: [human("Weather in Oslo?")] }, { onEvent: log.onEvent });

    expect(output.status).toBe("succeeded");
    expect(output.output).toEqual({ city: "Oslo", temperatureC: -3, conditions: "cloudy" });
    const body = open.bodies()[0]!;
    expect(toolNames(body)).toEqual([]);
    expect(body["response_format"]).toEqual({
      type: "json_schema",
      json_schema: {
        name: "final_output",
        strict: true,
        schema: expect.objectContaining({ type: "object", additionalProperties: false, required: ["city", "temperatureC", "conditions"] }),
      },
    });
    const partials = log.of("output.partial").map((e) => e.partial);
    expect(partials.length).toBeGreaterThanOrEqual(1);
    expect(partials.at(-1)).toEqual(output.output);
    // Each partial is a prefix of the final object: keys only ever get added or completed.
    for (const partial of partials) expect(Object.keys(partial as object).every((key) => key in (output.output as object))).toBe(true);
  });

  it("a schema with optional fields goes without strict (the provider would refuse it), and CheckOutput still validates", async () => {
    open = await loopback([textTurn(['{"answer":"yes"}'])]);
    const machine = createReactMachine({
      modelClient: open.client,
      output: z.object({ answer: z.string(), note: z.string().optional() }),
      config: { outputStrategy: "native" },
      configFile: false,
    });
    const output = await runAgent(machine, { messages: [human("?")] });
    expect(output.output).toEqual({ answer: "yes" });
    expect((open.bodies()[0]!["response_format"] as { json_schema: { strict: boolean } }).json_schema.strict).toBe(false);
  });
});

describe("structured output: types and options", () => {
  it("types AgentOutput.output as z.infer of the schema; finalAnswer stays a string", async () => {
    const machine = createReactMachine({ modelClient: scriptedModel([{ content: '{"n":1}' }]), output: z.object({ n: z.number() }), config: { outputStrategy: "native" }, configFile: false });
    const output = await runAgent(machine, { messages: [human("n?")] });
    expectTypeOf(output.output).toEqualTypeOf<{ n: number } | undefined>();
    expectTypeOf(output.finalAnswer).toEqualTypeOf<string | null>();
    expect(output.output).toEqual({ n: 1 });

    const plain = createReactMachine({ modelClient: scriptedModel([{ content: "hi" }]), configFile: false });
    const plainOutput = await runAgent(plain, { messages: [human("hi")] });
    expectTypeOf(plainOutput).toEqualTypeOf<AgentOutput<never>>();
    expect(plainOutput.output).toBeUndefined();
  });

  it('"auto" picks native for models known to support json_schema, the final-result tool for any other', async () => {
    const requestOf = async (model: string | undefined) => {
      const client = scriptedModel([{ content: '{"n":1}' }]);
      const machine = createReactMachine({ modelClient: client, output: z.object({ n: z.number() }), config: model ? { model } : {}, configFile: false });
      await runAgent(machine, { messages: [human("n?")] });
      const request = client.requests[0]!;
      return { tools: request.tools.map((t) => t.function.name), format: (request.extraParams?.["response_format"] as { type: string } | undefined)?.type };
    };
    expect(await requestOf("gpt-4o-mini")).toEqual({ tools: [], format: "json_schema" });
    expect(await requestOf("gpt-5")).toEqual({ tools: [], format: "json_schema" });
    expect(await requestOf("qwen3:8b")).toEqual({ tools: ["final_result"], format: undefined });
    expect(await requestOf(undefined)).toEqual({ tools: ["final_result"], format: undefined });
  });

  it('"auto" decides from the model the requests really go to: the client\'s own when config.model is unset (over HTTP, both APIs)', async () => {
    const server = await startOpenAIServer({
      respond: (request) =>
        request.path.endsWith("/responses")
          ? responsesTextTurn('{"city":"Paris","temperatureC":21}')
          : textTurn(['{"city":"Paris","temperatureC":21}']),
    });
    servers.push(server);
    const sent = async (options: { model: string; api?: "responses" }) => {
      const before = server.requests.length;
      const modelClient = resolveModelClient({ baseURL: server.baseURL, apiKey: "test-key", ...options });
      const output = await runAgent(createReactMachine({ modelClient, output: z.object({ city: z.string(), temperatureC: z.number() }), configFile: false }), { messages: [human("Weather in Paris?")] });
      expect(output.termination ?? null).toBeNull();
      expect(output.output).toEqual({ city: "Paris", temperatureC: 21 });
      return server.requests[before]!.body as Record<string, unknown>;
    };
    // The README's way: the model on the client. json_schema, no final-result tool.
    const chat = await sent({ model: "gpt-4o-mini" });
    expect(chat["response_format"]).toMatchObject({ type: "json_schema", json_schema: { name: "final_output" } });
    expect(toolNames(chat)).toEqual([]);
    const responses = await sent({ model: "gpt-5-mini", api: "responses" });
    expect(responses["text"]).toMatchObject({ format: { type: "json_schema", name: "final_output", strict: true } });
    expect(responses).not.toHaveProperty("tools");
    // A model not known for json_schema, on the client: the final-result tool.
    expect(toolNames(await sent({ model: "qwen3:8b" }))).toEqual(["final_result"]);
  });

  it("refuses an output that is not a zod schema, and a tool that takes the final-result tool's name", () => {
    expect(() => createReactMachine({ modelClient: scriptedModel([]), output: { type: "object" } as unknown as z.ZodType })).toThrow(MachineOptionsError);
    expect(() => createReactMachine({ modelClient: scriptedModel([]), output: { type: "object" } as unknown as z.ZodType })).toThrow(/options\.output must be a zod schema/);
    const clash = defineTool({ name: "final_result", description: "x", parameters: z.object({}), execute: () => "" });
    expect(() => createReactMachine({ modelClient: scriptedModel([]), tools: [clash], output: Weather, config: { outputStrategy: "tool" }, configFile: false })).toThrow(/rename that tool or set config.outputStrategy: "native"/);
  });
});

describe("structured output across a restore", () => {
  it("a restored run keeps its count of rejected outputs", async () => {
    const bad = { toolCalls: [{ id: "r1", name: "final_result", arguments: { city: 1 } }] };
    const make = (client: ReturnType<typeof scriptedModel>) =>
      createReactMachine({ modelClient: client, output: Weather, config: { outputStrategy: "tool", outputRetries: 1 }, configFile: false });

    const machine = make(scriptedModel([bad, { delayMs: 10_000, content: "never" }]));
    const first = createActor(machine, { input: { messages: [human("Weather?")] } });
    const saved = new Promise<unknown>((resolve) =>
      first.on("reply.started", (event) => {
        if (event.round === 2) resolve(JSON.parse(JSON.stringify(persistAgent(first))));
      }),
    );
    first.start();
    const record = await saved;
    first.stop();

    const again = make(scriptedModel([{ toolCalls: [{ id: "r2", name: "final_result", arguments: { city: 2 } }] }]));
    const second = createActor(again, { snapshot: restoreAgent(again, record) });
    second.start();
    const output = await toPromise(second);
    // One rejection before the restore and one after: past outputRetries 1.
    expect(output.termination?.reason).toBe("invalidOutput");
    expect(output.termination?.raw).toBe('{"city":2}');
  });
});

