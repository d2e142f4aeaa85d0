import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { human } from "../../actors/messages.js";
import { resolveModelClient } from "../../actors/openai/openai-model-client.js";
import type { ToolJournal } from "../../actors/tool-journal.js";
import type { AgentEmitted } from "../../machines/contract/events.js";
import { MemoryCheckpointStore } from "../../machines/persistence/checkpoints/memory-store.js";
import { SqliteCheckpointStore } from "../../machines/persistence/checkpoints/sqlite-store.js";
import { forkRun } from "../../machines/persistence/log/fork.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { runAgent } from "../../machines/runner.js";
import type { OpenAIServer } from "../../testing/openai-server.js";
import { judging, PRICING, resumed as resumedOver, stoppedWhileJudging as stoppedIn, type Options, type Store } from "./restored-judge.js";
import { pricedServer, USAGE } from "./restored-spend.js";

/*
 * A process stopped while its output guardrail's LLM judge waited on a reply may have made that call
 * (`ctx.budgeted`), and been billed for it. The guarding state is no checkpoint: the run restored
 * from its last one (the reply it was waiting on) asks the model again (that lost reply counts, as
 * restored-call-spend.test.ts shows) and checks the new answer. With a budget and a tool journal,
 * each judge call is recorded before it is made, with the most it may cost, and the step run again
 * counts the one the earlier process began there. Before, it counted only its own calls, so a run
 * resumed again and again could spend past its budget.
 */

let server: OpenAIServer;
beforeAll(async () => {
  server = await pricedServer();
});
afterAll(async () => {
  await server?.close();
});

const stoppedWhileJudging = (options: Options, store: Store = new MemoryCheckpointStore()) => stoppedIn(options, store);
const resumed = (options: Options, saved: unknown, store: Store, journal?: ToolJournal) => resumedOver(server, options, saved, store, journal);

describe("a judge call a stopped process's guardrail had made", () => {
  it("counts when the restored run checks again: its prompt and its cap, beside the lost reply and what the new calls reported", async () => {
    const options: Options = { config: { maxBudgetTokens: 100_000, maxBudgetCost: 10, maxTokens: 500, pricing: PRICING } };
    const { store, saved, lostReply, lostJudge, lostJudgeCall } = await stoppedWhileJudging(options);
    expect(lostJudgeCall.maxTokens).toBe(300);

    const { output, terminated, judged, sent } = await resumed(options, saved, store);
    expect(output.status).toBe("succeeded");
    // The reply asked again and the judge's call made again, as reported; the two lost calls beside them.
    expect(sent).toBe(2);
    expect(output.usage.totalTokens).toBe(2 * USAGE.total_tokens);
    expect(terminated?.unreported?.tokens).toBe(lostReply.tokens + lostJudge.tokens);
    expect(terminated?.unreported?.cost).toBeCloseTo(lostReply.cost + lostJudge.cost, 12);
    // The judge's new call had what the budget left after everything before it, the lost judge call included.
    expect(judged[0]!.spend!.tokens).toBe(100_000 - lostReply.tokens - USAGE.total_tokens - lostJudge.tokens);
  });

  it("leaves the call made again only what the lost one left: refused when that is too little, without a request", async () => {
    const probe = await stoppedWhileJudging({ config: { maxBudgetTokens: 100_000, maxTokens: 500 } });
    // Room for the reply asked again and for the lost judge call, and 5 tokens more: no prompt fits in that.
    const options: Options = { config: { maxBudgetTokens: probe.lostReply.tokens + USAGE.total_tokens + probe.lostJudge.tokens + 5, maxTokens: 500 } };
    const { store, saved, lostReply, lostJudge } = await stoppedWhileJudging(options);
    expect(lostJudge).toEqual(probe.lostJudge);

    const { output, terminated, judged, sent } = await resumed(options, saved, store);
    expect(sent).toBe(1);
    expect(judged).toEqual([]);
    expect(output.termination).toMatchObject({ reason: "guardrailTripped", guardrail: "judge" });
    expect(terminated?.unreported?.tokens).toBe(lostReply.tokens + lostJudge.tokens);
  });

  it("is counted from a SQLite store reopened by the next process", async () => {
    const dir = mkdtempSync(join(tmpdir(), "jianmu-judge-"));
    try {
      const options: Options = { config: { maxBudgetTokens: 100_000, maxTokens: 500 } };
      const first = new SqliteCheckpointStore({ path: join(dir, "runs.db") });
      const { lostReply, lostJudge } = await stoppedWhileJudging(options, first);
      first.close();
      const next = new SqliteCheckpointStore({ path: join(dir, "runs.db") });
      try {
        const { output, terminated } = await resumed(options, (await next.load("run-1"))!, next);
        expect(output.status).toBe("succeeded");
        expect(terminated?.unreported?.tokens).toBe(lostReply.tokens + lostJudge.tokens);
      } finally {
        next.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("is the original run's, not a fork's started at that checkpoint", async () => {
    const options: Options = { config: { maxBudgetTokens: 100_000, maxTokens: 500 } };
    const { store } = await stoppedWhileJudging(options);
    const forkId = await forkRun(store, "run-1", { from: (await store.history("run-1")).at(-1)!.checkpointId });
    const { output, terminated, sent } = await resumed(options, await store.load(forkId), store);
    expect(output.status).toBe("succeeded");
    expect(sent).toBe(2);
    // Neither the reply nor the judge call the original may have made is the fork's.
    expect(terminated).not.toHaveProperty("unreported");
  });

  it("is not counted without a budget, nor by a run that was never stopped", async () => {
    const { store, saved } = await stoppedWhileJudging({});
    const { output, terminated } = await resumed({}, saved, store);
    expect(output.status).toBe("succeeded");
    expect(terminated).not.toHaveProperty("unreported");

    const fresh = new MemoryCheckpointStore();
    const client = resolveModelClient({ baseURL: server.baseURL, apiKey: "test-key", model: "priced-model", stream: false, resilience: { maxRetries: 0 } });
    const machine = createReactMachine({ config: { maxBudgetTokens: 100_000 }, journal: fresh, modelClient: client, outputGuardrails: [judging(client)] });
    const events: AgentEmitted[] = [];
    const once = await runAgent(machine, { messages: [human("Summarise the quarter.")] }, { checkpoints: fresh, onEvent: (event) => events.push(event) });
    expect(once.status).toBe("succeeded");
    expect(once.usage.totalTokens).toBe(2 * USAGE.total_tokens);
    expect(events.find((event) => event.type === "loop.terminated")).not.toHaveProperty("unreported");
  });

  it("is not made when the journal cannot record it: the guardrail hears why, and no request goes out", async () => {
    const options: Options = { config: { maxBudgetTokens: 100_000, maxTokens: 500 } };
    const { store, saved } = await stoppedWhileJudging(options);
    const broken: ToolJournal = {
      started: (key, name) => (key.callId.startsWith("jianmu.judge.") ? Promise.reject(new Error("disk full")) : store.started(key, name)),
      completed: (key, outcome) => store.completed(key, outcome),
      lookup: (key) => store.lookup(key),
      forget: (runId) => store.forget(runId),
    };
    const { output, judged } = await resumed(options, saved, store, broken);
    expect(judged).toEqual([]);
    expect(output.termination).toMatchObject({ reason: "guardrailTripped", guardrail: "judge" });
    expect(output.termination?.detail).toContain("the tool journal could not record it");
  });
});
