import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { createReactMachine } from "../../machines/react-machine.js";
import { runAgent } from "../../machines/runner.js";
import type { PersistedAgent } from "../../machines/persistence/persistence.js";
import { resolveModelClient } from "../../actors/openai/openai-model-client.js";
import { defineTool } from "../../tools/tool.js";
import { startsOver } from "../../queue/fresh-start.js";
import type { OpenAIServer } from "../../testing/openai-server.js";
import { scriptMessage, startScriptServer } from "./script-model.js";

/** Every checkpoint runAgent saves for a run of one tool call, in order. */
async function checkpointsOf(limits: { maxDurationMs?: number; maxBudgetTokens?: number }, baseURL: string) {
  const record = defineTool({ name: "record", description: "Note it", parameters: z.object({ note: z.string() }), execute: async ({ note }) => `recorded ${note}` });
  const machine = createReactMachine({
    name: "fresh",
    modelClient: resolveModelClient({ baseURL, apiKey: "k", model: "scripted", stream: false, resilience: { maxRetries: 0 } }),
    tools: [record],
    configFile: false,
    config: { maxIterations: 4, ...limits },
  });
  const saved: PersistedAgent[] = [];
  const output = await runAgent(
    machine,
    { messages: [scriptMessage({ calls: [{ name: "record", note: "n" }], answer: "done" })] },
    { checkpoints: { save: (_id, record) => void saved.push(record), load: () => undefined, list: () => [], delete: () => false } },
  );
  expect(output.status).toBe("succeeded");
  return { machine, saved };
}

describe("startsOver: the checkpoints a queue worker need not write", () => {
  let server: OpenAIServer;
  beforeAll(async () => {
    server = await startScriptServer();
  });
  afterAll(async () => {
    await server.close();
  });

  it("is the first model call of a run with nothing done before it, and no later checkpoint", async () => {
    const { machine, saved } = await checkpointsOf({}, server.baseURL);
    expect(saved.length).toBeGreaterThan(2);
    expect(saved.map((record) => startsOver(machine, record))).toEqual(saved.map((_, i) => i === 0));
  });

  it("is not a run with a deadline: the deadline was fixed when the run started, and a start over would move it", async () => {
    const { machine, saved } = await checkpointsOf({ maxDurationMs: 60_000 }, server.baseURL);
    expect(saved[0]!.snapshot).toMatchObject({ context: { loop: { iteration: 0 } } });
    expect(saved.map((record) => startsOver(machine, record))).toEqual(saved.map(() => false));
  });

  it("is not a run with a budget: restored from it, the run counts the first call a lost process may have made; started over, it would not", async () => {
    const { machine, saved } = await checkpointsOf({ maxBudgetTokens: 100_000 }, server.baseURL);
    expect(saved[0]!.snapshot).toMatchObject({ context: { loop: { iteration: 0 } } });
    expect(saved[0]!.state).toBe("Evaluating.ChildRunning.AgentLLM");
    expect(saved.map((record) => startsOver(machine, record))).toEqual(saved.map(() => false));
  });
});
