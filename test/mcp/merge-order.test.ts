import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { human } from "../../actors/messages.js";
import { textOf } from "../../actors/content-parts.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { runAgent } from "../../machines/runner.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import type { ToolProvider } from "../../tools/provider.js";
import { defineTool, type Tool } from "../../tools/tool.js";
import { everything, isRunning, memory, tempDir } from "./helpers.js";

/** A tool that answers with who provides it, so the test sees which one the merge kept. */
const answering = (name: string, who: string): Tool =>
  defineTool({ name, description: `${name} from ${who}`, parameters: z.object({}), execute: () => `${name} answered by ${who}` });

const providerOf = (name: string, tools: Tool[]): ToolProvider => ({ name, initialize: () => undefined, getTools: () => tools, close: () => undefined });

/** Run one round that calls each named tool once, and return the model's view and the observations. */
async function callEach(names: string[], options: { providers: ToolProvider[]; tools?: Tool[] }) {
  const model = scriptedModel([{ toolCalls: names.map((name, i) => ({ id: `c${i}`, name, arguments: {} })) }, { content: "done" }]);
  const machine = createReactMachine({ modelClient: model, toolProviders: options.providers, ...(options.tools ? { tools: options.tools } : {}) });
  const output = await runAgent(machine, { messages: [human("go")] });
  const offered = model.requests[0]!.tools.map((t) => t.function);
  const observations = output.messages.filter((m) => m.role === "tool").map((m) => m.content);
  return { offered, observations };
}

describe("contract section 2 merge order (one rule per test)", () => {
  it("offers the tools of every provider, in provider order", async () => {
    const { offered } = await callEach([], {
      providers: [providerOf("p1", [answering("a", "p1"), answering("b", "p1")]), providerOf("p2", [answering("c", "p2")])],
    });
    expect(offered.map((f) => f.name)).toEqual(["a", "b", "c"]);
  });

  it("lets a later provider override an earlier one's tool of the same name", async () => {
    const { offered, observations } = await callEach(["x"], {
      providers: [providerOf("p1", [answering("x", "p1")]), providerOf("p2", [answering("x", "p2")])],
    });
    expect(offered).toEqual([expect.objectContaining({ name: "x", description: "x from p2" })]);
    expect(observations).toEqual(["x answered by p2"]);
  });

  it("lets a static tool override every provider's tool of the same name", async () => {
    const { offered, observations } = await callEach(["x"], {
      providers: [providerOf("p1", [answering("x", "p1")]), providerOf("p2", [answering("x", "p2")])],
      tools: [answering("x", "static")],
    });
    expect(offered).toEqual([expect.objectContaining({ name: "x", description: "x from static" })]);
    expect(observations).toEqual(["x answered by static"]);
  });

  it("refuses two static tools with one name (there is no order between them)", () => {
    expect(() => createReactMachine({ modelClient: scriptedModel([]), tools: [answering("x", "one"), answering("x", "two")] })).toThrow(
      'tool "x": name is used by two static tools',
    );
  });
});

describe("two real servers and static tools in one agent", () => {
  it("merges server-everything (twice) and server-memory by the contract's rules", async () => {
    const temp = tempDir("jianmu-mcp-memory-");
    const memoryFile = join(temp.dir, "graph.jsonl");
    try {
      // Two instances of server-everything overlap on get-env; the later one (TAG=second) must win.
      const first = everything({ name: "everything-first", env: { TAG: "first" }, filter: ["get-env", "get-sum", "echo"] });
      const kb = memory(memoryFile, { prefix: "kb_" });
      const second = everything({ name: "everything-second", env: { TAG: "second" }, filter: ["get-env"] });
      // Static tools override an MCP tool of each server.
      const staticTools = [answering("echo", "static"), answering("kb_read_graph", "static")];

      const model = scriptedModel([
        {
          toolCalls: [
            { id: "env", name: "get-env", arguments: {} },
            { id: "sum", name: "get-sum", arguments: { a: 20, b: 22 } },
            { id: "echo", name: "echo", arguments: {} },
            { id: "create", name: "kb_create_entities", arguments: { entities: [{ name: "Ada", entityType: "person", observations: ["wrote the first program"] }] } },
          ],
        },
        {
          toolCalls: [
            { id: "search", name: "kb_search_nodes", arguments: { query: "Ada" } },
            { id: "graph", name: "kb_read_graph", arguments: {} },
          ],
        },
        { content: "done" },
      ]);
      const machine = createReactMachine({ modelClient: model, toolProviders: [first, kb, second], tools: staticTools });
      const output = await runAgent(machine, { messages: [human("go")] });
      expect(output.status).toBe("succeeded");

      const offered = model.requests[0]!.tools.map((t) => t.function);
      const names = offered.map((f) => f.name);
      expect(names.filter((n) => n === "get-env")).toHaveLength(1);
      expect(names.filter((n) => n === "echo")).toHaveLength(1);
      expect(names).toEqual(expect.arrayContaining(["get-sum", "kb_create_entities", "kb_search_nodes", "kb_open_nodes", "kb_delete_entities"]));
      expect(offered.find((f) => f.name === "kb_read_graph")?.description).toBe("kb_read_graph from static");

      const observation = (id: string) => textOf(output.messages.find((m) => m.role === "tool" && m.toolCallId === id)?.content ?? "");
      expect((JSON.parse(observation("env")) as Record<string, string>)["TAG"]).toBe("second");
      expect(observation("sum")).toBe("The sum of 20 and 22 is 42.");
      expect(observation("echo")).toBe("echo answered by static");
      expect(observation("search")).toContain('"name": "Ada"');
      expect(observation("graph")).toBe("kb_read_graph answered by static");
      // server-memory kept its graph where it was told to.
      expect(readFileSync(memoryFile, "utf8")).toContain('"name":"Ada"');
      for (const provider of [first, kb, second]) expect(isRunning(provider.pid!)).toBe(false);
    } finally {
      temp.remove();
    }
  });
});
