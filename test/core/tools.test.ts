import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defaultContextBuilder, DEFAULT_PERSONA, REACT_PROTOCOL } from "../../actors/context-builder.js";
import { human, system } from "../../actors/messages.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { runAgent } from "../../machines/runner.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import type { ToolProvider } from "../../tools/provider.js";
import { defineTool, ToolDefinitionError, type Tool } from "../../tools/tool.js";
import { ToolSet } from "../../tools/toolset.js";
import { multiply } from "./helpers.js";

const named = (name: string, description: string): Tool =>
  defineTool({ name, description, parameters: z.object({ q: z.string().describe("the query") }), execute: () => description });

function provider(name: string, tools: Tool[], log: string[]): ToolProvider<{ user: string }> {
  return {
    name,
    initialize: (ctx) => void log.push(`init ${name} for ${ctx.user}`),
    getTools: () => tools,
    close: () => void log.push(`close ${name}`),
  };
}

describe("defineTool", () => {
  it("derives the JSON schema from the zod parameters", () => {
    const tool = defineTool({
      name: "search",
      description: "Search the web",
      parameters: z.object({ query: z.string().describe("what to look for"), limit: z.number().int().default(5) }),
      execute: () => [],
    });
    expect(tool.inputSchema).toEqual({
      type: "object",
      properties: { query: { type: "string", description: "what to look for" }, limit: { type: "integer", default: 5, minimum: expect.any(Number), maximum: expect.any(Number) } },
      required: ["query"],
    });
    expect(tool.validate({ query: "x" })).toEqual({ ok: true, value: { query: "x", limit: 5 } });
    expect(tool.validate({ limit: "many" })).toMatchObject({ ok: false, error: expect.stringMatching(/query: .*; limit: /) });
    expect(tool.parallelSafe).toBe(false);
    expect(tool.effectTags).toEqual([]);
  });

  it("rejects definitions the model API would reject, naming the field", () => {
    const base = { description: "d", parameters: z.object({}), execute: () => 1 };
    expect(() => defineTool({ ...base, name: "has space" })).toThrow(ToolDefinitionError);
    expect(() => defineTool({ ...base, name: "x".repeat(65) })).toThrow(/name must be 1-64 characters/);
    expect(() => defineTool({ ...base, name: "ok", description: " " })).toThrow(/tool "ok": description must be a non-empty string/);
    expect(() => defineTool({ ...base, name: "ok", parameters: z.string() as never })).toThrow(/parameters must be a zod object schema/);
    expect(() => defineTool({ ...base, name: "ok", timeoutMs: -1 })).toThrow(/timeoutMs must be a positive number/);
  });
});

describe("ToolSet", () => {
  it("merges providers in order (later wins), then static tools (they win over everything)", async () => {
    const log: string[] = [];
    const first = provider("first", [named("a", "a from first"), named("b", "b from first")], log);
    const second = provider("second", [named("b", "b from second"), named("c", "c from second")], log);
    const set = (await ToolSet.fromProviders([first, second], { user: "ann" })).withTools([named("c", "c static"), named("d", "d static")]);
    expect(set.list().map((t) => `${t.name}:${t.description}`)).toEqual(["a:a from first", "b:b from second", "c:c static", "d:d static"]);
    expect(log).toEqual(["init first for ann", "init second for ann"]);
    await set.close();
    expect(log.slice(2)).toEqual(["close second", "close first"]);
  });

  it("gives OpenAI function schemas and a readable description", () => {
    const set = ToolSet.empty().withTools([named("lookup", "Look something up")]);
    expect(set.schemas()).toEqual([
      {
        type: "function",
        function: {
          name: "lookup",
          description: "Look something up",
          parameters: { type: "object", properties: { q: { type: "string", description: "the query" } }, required: ["q"] },
        },
      },
    ]);
    expect(set.describe()).toBe("- lookup: Look something up\n    q (string, required) — the query");
    expect(ToolSet.empty().describe()).toBe("No tools are available.");
  });

  it("a provider that fails to start closes the ones already started and names itself", async () => {
    const log: string[] = [];
    const good = provider("good", [named("a", "a")], log);
    const bad: ToolProvider<{ user: string }> = { name: "broken-server", initialize: () => Promise.reject(new Error("spawn ENOENT")), getTools: () => [], close: () => void log.push("close broken") };
    await expect(ToolSet.fromProviders([good, bad], { user: "x" })).rejects.toThrow('tool provider "broken-server" failed during initialize: spawn ENOENT');
    expect(log).toEqual(["init good for x", "close broken", "close good"]);
  });

  it("the machine offers the merged set to the model and runs the winning tool", async () => {
    const log: string[] = [];
    const fromProvider = defineTool({ name: "multiply", description: "provider's multiply", parameters: z.object({ a: z.number(), b: z.number() }), execute: () => "provider" });
    const model = scriptedModel([{ toolCalls: [{ name: "multiply", arguments: { a: 2, b: 3 } }] }, { content: "6" }]);
    const machine = createReactMachine({
      modelClient: model,
      tools: [multiply],
      toolProviders: [provider("p", [fromProvider, named("extra", "extra tool")], log)],
      toolProviderContext: { user: "bob" },
    });
    const output = await runAgent(machine, { messages: [human("2*3")] });
    expect(model.requests[0]!.tools.map((t) => `${t.function.name}:${t.function.description}`)).toEqual(["multiply:Multiply two numbers", "extra:extra tool"]);
    expect(output.messages[2]).toMatchObject({ content: "6" });
    expect(log).toEqual(["init p for bob", "close p"]);
  });
});

describe("context builder", () => {
  const input = { agent: "A", iteration: 0, messages: [human("hi")], state: {}, tools: [multiply].map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema, parallelSafe: true, effectTags: [] })) };

  it("the default preset is persona + ReAct protocol + tool descriptions, then the history", () => {
    const [prompt, ...rest] = defaultContextBuilder(input) as ReturnType<typeof system>[];
    expect(prompt!.role).toBe("system");
    expect(prompt!.content.startsWith(DEFAULT_PERSONA)).toBe(true);
    expect(prompt!.content).toContain(REACT_PROTOCOL);
    expect(prompt!.content).toContain("- multiply: Multiply two numbers");
    expect(rest).toEqual([human("hi")]);
  });

  it("prompts written once per tool list stay right for every persona, past the personas it keeps", () => {
    const personas = Array.from({ length: 20 }, (_, i) => `Persona ${i}.`);
    for (let round = 0; round < 2; round++) {
      for (const persona of personas) {
        const content = (defaultContextBuilder({ ...input, systemPrompt: persona }) as ReturnType<typeof system>[])[0]!.content;
        expect(content.startsWith(`${persona}\n\n${REACT_PROTOCOL}`)).toBe(true);
        expect(content).toContain("- multiply: Multiply two numbers");
      }
    }
    const otherTools = [{ ...input.tools[0]!, name: "divide", description: "Divide two numbers" }];
    const other = (defaultContextBuilder({ ...input, tools: otherTools }) as ReturnType<typeof system>[])[0]!.content;
    expect(other).toContain("- divide: Divide two numbers");
    expect(other).not.toContain("multiply");
  });

  it("config.systemPrompt replaces the persona but keeps the protocol and tools", async () => {
    const model = scriptedModel([{ content: "ok" }]);
    await runAgent(createReactMachine({ modelClient: model, tools: [multiply], config: { systemPrompt: "You are a pirate." } }), { messages: [human("hi")] });
    const prompt = model.requests[0]!.messages[0]!;
    expect(prompt.role).toBe("system");
    expect((prompt as { content: string }).content.startsWith("You are a pirate.")).toBe(true);
    expect((prompt as { content: string }).content).not.toContain(DEFAULT_PERSONA);
    expect((prompt as { content: string }).content).toContain(REACT_PROTOCOL);
  });

  it("an explicit contextBuilder replaces all of it, and systemPrompt is then ignored", async () => {
    const model = scriptedModel([{ content: "ok" }]);
    const machine = createReactMachine({
      modelClient: model,
      tools: [multiply],
      config: { systemPrompt: "ignored" },
      contextBuilder: ({ messages, tools }) => [system(`custom with ${tools.length} tool(s)`), ...messages.slice(-1)],
    });
    await runAgent(machine, { messages: [human("first"), human("last")] });
    expect(model.requests[0]!.messages).toEqual([system("custom with 1 tool(s)"), human("last")]);
    expect(model.requests[0]!.tools).toHaveLength(1);
  });
});
