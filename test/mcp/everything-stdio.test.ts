import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { human } from "../../actors/messages.js";
import type { AgentEmitted } from "../../machines/contract/events.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { runAgent } from "../../machines/runner.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import type { Tool, ToolContext } from "../../tools/tool.js";
import type { McpToolProvider } from "../../tools/mcp/mcp-provider.js";
import { everything, isRunning } from "./helpers.js";

const ctx = (): ToolContext => ({ signal: new AbortController().signal, callId: "direct", state: {} });

describe("server-everything over stdio: the provider on its own", () => {
  let provider: McpToolProvider;
  let tools: readonly Tool[];
  const byName = (name: string) => tools.find((tool) => tool.name === name)!;

  beforeAll(async () => {
    process.env["JIANMU_TEST_PARENT_SECRET"] = "must-not-leak";
    provider = everything({ env: { GIVEN_TO_SERVER: "yes" } });
    await provider.initialize(undefined);
    tools = await provider.getTools(undefined);
  });
  afterAll(async () => {
    delete process.env["JIANMU_TEST_PARENT_SECRET"];
    await provider.close();
  });

  it("lists the server's tools under their own names (they are already model-safe)", () => {
    const names = tools.map((tool) => tool.name);
    expect(names).toEqual(expect.arrayContaining(["echo", "get-sum", "get-env", "get-tiny-image", "get-resource-links", "gzip-file-as-resource"]));
    expect(provider.mcpName("get-sum")).toBe("get-sum");
    for (const name of names) expect(name).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
  });

  it("leaves out the task-only tool and says why", () => {
    expect(tools.map((tool) => tool.name)).not.toContain("simulate-research-query");
    expect(provider.skipped).toContainEqual({ mcpName: "simulate-research-query", reason: expect.stringContaining("MCP task") });
  });

  it("keeps the server's JSON Schema (minus $schema) and description", () => {
    const sum = byName("get-sum");
    expect(sum.description).toBe("Returns the sum of two numbers");
    expect(sum.inputSchema).toEqual({
      type: "object",
      properties: { a: { type: "number", description: "First number" }, b: { type: "number", description: "Second number" } },
      required: ["a", "b"],
    });
  });

  it("maps the annotations: read-only tools run in parallel, open-world ones are tagged network", () => {
    expect(byName("echo")).toMatchObject({ parallelSafe: true, effectTags: [] });
    // gzip-file-as-resource: readOnlyHint false, destructiveHint false, openWorldHint true.
    expect(byName("gzip-file-as-resource")).toMatchObject({ parallelSafe: false, effectTags: ["network"] });
    // toggle-simulated-logging writes but is neither destructive nor open-world.
    expect(byName("toggle-simulated-logging")).toMatchObject({ parallelSafe: false, effectTags: [] });
  });

  it("validates arguments against the server's schema before calling", () => {
    expect(byName("get-sum").validate({ a: 1, b: 2 })).toEqual({ ok: true, value: { a: 1, b: 2 } });
    const bad = byName("get-sum").validate({ a: "two" });
    expect(bad.ok).toBe(false);
    expect(!bad.ok && bad.error).toContain("a: must be number");
    expect(!bad.ok && bad.error).toContain("(arguments): must have required property 'b'");
  });

  it("summarizes an image in words", async () => {
    const text = await byName("get-tiny-image").execute({}, ctx());
    expect(text).toMatch(/^Here's the image you requested:\n\[image: image\/png, [\d.]+ (bytes|KB)\]\nThe image above is the MCP logo\.$/);
  });

  it("summarizes resource links and embedded resources by uri and type", async () => {
    const links = String(await byName("get-resource-links").execute({ count: 2 }, ctx()));
    expect(links.split("\n")).toEqual([
      "Here are 2 resource links to resources available in this server:",
      expect.stringMatching(/^\[resource link: Blob Resource 1 <demo:\/\/resource\/dynamic\/blob\/1>, [\w/-]+ — Resource 1: .+\]$/),
      "[resource link: Text Resource 2 <demo://resource/dynamic/text/2>, text/plain — Resource 2: plaintext resource]",
    ]);
    const reference = String(await byName("get-resource-reference").execute({ resourceType: "Text", resourceId: 1 }, ctx()));
    expect(reference).toMatch(/\[embedded resource: demo:\/\/resource\/dynamic\/text\/1, text\/plain, \d+ characters of text\]/);
  });

  it("gives the server only the SDK's safe variables and the env it was given, not this process's environment", async () => {
    const env = JSON.parse(String(await byName("get-env").execute({}, ctx()))) as Record<string, string>;
    expect(env["GIVEN_TO_SERVER"]).toBe("yes");
    expect(env["PATH"]).toBe(process.env["PATH"]);
    expect(env).not.toHaveProperty("JIANMU_TEST_PARENT_SECRET");
  });

  it("runs the server as a child process while initialized", () => {
    expect(provider.pid).toBeTypeOf("number");
    expect(isRunning(provider.pid!)).toBe(true);
  });
});

describe("server-everything over stdio: inside an agent", () => {
  it("calls echo and get-sum for the model and feeds their observations back", async () => {
    const model = scriptedModel([
      {
        toolCalls: [
          { id: "call_echo", name: "echo", arguments: { message: "hello" } },
          { id: "call_sum", name: "get-sum", arguments: { a: 2, b: 3 } },
        ],
      },
      { content: "Echoed hello; 2 + 3 = 5." },
    ]);
    const provider = everything();
    const machine = createReactMachine({ modelClient: model, toolProviders: [provider] });
    const events: AgentEmitted[] = [];
    const output = await runAgent(machine, { messages: [human("echo hello and add 2 and 3")] }, { onEvent: (e) => events.push(e) });

    expect(output.status).toBe("succeeded");
    expect(output.finalAnswer).toBe("Echoed hello; 2 + 3 = 5.");
    expect(output.messages.filter((m) => m.role === "tool")).toEqual([
      expect.objectContaining({ toolCallId: "call_echo", content: "Echo: hello" }),
      expect.objectContaining({ toolCallId: "call_sum", content: "The sum of 2 and 3 is 5." }),
    ]);
    // The model saw the server's tools as function declarations.
    const offered = model.requests[0]!.tools.map((t) => t.function.name);
    expect(offered).toEqual(expect.arrayContaining(["echo", "get-sum"]));
    expect(events.filter((e) => e.type === "tool.call.completed").map((e) => (e as { name: string }).name)).toEqual(
      expect.arrayContaining(["echo", "get-sum"]),
    );
    // runAgent resolves after the providers closed: the server process is gone.
    expect(isRunning(provider.pid!)).toBe(false);
  });

  it("answers bad arguments with a validation error observation, without calling the tool", async () => {
    const model = scriptedModel([{ toolCalls: [{ id: "call_bad", name: "get-sum", arguments: { a: "two", b: 3 } }] }, { content: "sorry" }]);
    const provider = everything();
    const machine = createReactMachine({ modelClient: model, toolProviders: [provider] });
    const events: AgentEmitted[] = [];
    const output = await runAgent(machine, { messages: [human("add")] }, { onEvent: (e) => events.push(e) });

    const observation = output.messages.find((m) => m.role === "tool");
    expect(observation).toMatchObject({ toolCallId: "call_bad", content: "Error: invalid arguments for get-sum: a: must be number" });
    expect(events.find((e) => e.type === "tool.call.failed")).toMatchObject({ name: "get-sum", errorKind: "invalid_arguments" });
    expect(events.some((e) => e.type === "tool.call.completed")).toBe(false);
    expect(output.status).toBe("succeeded");
  });
});
