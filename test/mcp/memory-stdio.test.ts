import { join } from "node:path";
import { expect, it } from "vitest";
import { isRunning, memory, tempDir } from "./helpers.js";

it("maps server-memory's annotations: deletes are destructive, reads run in parallel", async () => {
  const temp = tempDir("jianmu-mcp-memory-annotations-");
  const provider = memory(join(temp.dir, "graph.jsonl"), { prefix: "kb_" });
  try {
    await provider.initialize(undefined);
    const tools = await provider.getTools(undefined);
    const byName = (name: string) => tools.find((tool) => tool.name === name);
    expect(tools.map((t) => t.name).sort()).toEqual(
      ["add_observations", "create_entities", "create_relations", "delete_entities", "delete_observations", "delete_relations", "open_nodes", "read_graph", "search_nodes"]
        .map((name) => `kb_${name}`)
        .sort(),
    );
    expect(byName("kb_delete_entities")).toMatchObject({ parallelSafe: false, effectTags: ["destructive"], idempotent: true });
    expect(byName("kb_create_entities")).toMatchObject({ parallelSafe: false, effectTags: [] });
    expect(byName("kb_create_entities")).not.toHaveProperty("idempotent");
    expect(byName("kb_read_graph")).toMatchObject({ parallelSafe: true, effectTags: [], idempotent: true });
    expect(provider.mcpName("kb_read_graph")).toBe("read_graph");
  } finally {
    await provider.close();
    temp.remove();
  }
  expect(isRunning(provider.pid!)).toBe(false);
});
