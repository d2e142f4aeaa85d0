import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createActor } from "xstate";
import { z } from "zod";
import { human, type Message } from "../../actors/messages.js";
import { resolveModelClient } from "../../actors/openai/openai-model-client.js";
import type { ToolJournal } from "../../actors/tool-journal.js";
import { checkpointAgent } from "../../machines/persistence/checkpoints/checkpoint-agent.js";
import { MemoryCheckpointStore } from "../../machines/persistence/checkpoints/memory-store.js";
import { SqliteCheckpointStore } from "../../machines/persistence/checkpoints/sqlite-store.js";
import type { CheckpointStore } from "../../machines/persistence/checkpoints/store.js";
import type { AgentOutput } from "../../machines/contract/context.js";
import type { AgentEmitted } from "../../machines/contract/events.js";
import { restoreAgent } from "../../machines/persistence/persistence.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { runAgent } from "../../machines/runner.js";
import { startOpenAIServer, type OpenAIServer, type ReceivedRequest, type Reply } from "../../testing/openai-server.js";
import { defineTool } from "../../tools/tool.js";
import { FAST_RESILIENCE, SECRET_KEY } from "../model-client/harness.js";
import { errorKindsOf, FINAL_TEXT, faultArbitrary, isRetryable, predict, replyFor, roundOf, TOOL_CALL, type Fault } from "./fault-plan.js";
import { propertyRuns, watchProcess } from "./process-watch.js";

/*
 * Fault injection over many runs against the loopback OpenAI-compatible server: random 429s and
 * 5xx, connection resets, stalls past the attempt timeout and streams cut before or after output
 * reached the caller. Every run must end Succeeded with the complete conversation, or Failed with
 * reason modelError and the error, exactly as the retry policy predicts; nothing half-applied.
 * A checkpointed run crashed at any checkpoint resumes to the same result.
 *
 * JIANMU_PROPERTY_RUNS=N runs N cases per property (defaults: 80 fault runs, 30 crash/resume runs).
 */

const MAX_RETRIES = 2;
/** Per attempt: a stall or a stalled stream ends after this long. Generous, so a healthy reply on a loaded CI machine never hits it. */
const ATTEMPT_TIMEOUT_MS = 500;

/** The whole conversation of a successful run, as it must come out (nothing lost, nothing doubled). */
const COMPLETE: Message[] = [
  { role: "user", content: "What is the weather in Oslo?" },
  { role: "assistant", content: null, toolCalls: [{ ...TOOL_CALL }] },
  { role: "tool", toolCallId: TOOL_CALL.id, name: "lookup", content: "Oslo: sunny" },
  { role: "assistant", content: FINAL_TEXT },
];

let server: OpenAIServer;
/** What the server does with the next request; each test installs its own. */
let respond: (request: ReceivedRequest) => Reply = () => {
  throw new Error("no plan installed");
};

beforeAll(async () => {
  server = await startOpenAIServer({ respond: (request) => respond(request) });
});
afterAll(async () => {
  await server.close();
});

function lookupTool(options: { idempotent?: boolean } = {}) {
  const runs: string[] = [];
  const tool = defineTool({
    name: "lookup",
    description: "Look up the weather of a city",
    parameters: z.object({ city: z.string() }),
    ...(options.idempotent ? { idempotent: true } : {}),
    execute: ({ city }) => {
      runs.push(city);
      return `${city}: sunny`;
    },
  });
  return { tool, runs };
}

function agent(options: { idempotent?: boolean; journal?: ToolJournal } = {}) {
  const { tool, runs } = lookupTool(options);
  const modelClient = resolveModelClient({
    baseURL: server.baseURL,
    apiKey: SECRET_KEY,
    model: "fault-model",
    timeoutMs: ATTEMPT_TIMEOUT_MS,
    resilience: { ...FAST_RESILIENCE, maxRetries: MAX_RETRIES },
  });
  const machine = createReactMachine({ modelClient, tools: [tool], ...(options.journal ? { journal: options.journal } : {}) });
  return { machine, runs };
}

const input = { messages: [human("What is the weather in Oslo?")] };

describe("fault injection on the loopback server", () => {
  it("every run ends as the retry policy predicts: Succeeded with the whole conversation, or Failed with the model error", async () => {
    const watch = watchProcess();
    let cases = 0;
    const outcomes = { succeeded: 0, failed: 0, faults: 0 };
    await fc.assert(
      fc.asyncProperty(fc.array(faultArbitrary, { maxLength: 7 }), async (plan) => {
        cases += 1;
        const first = server.requests.length;
        respond = (request) => replyFor(plan[request.index - first] ?? { kind: "ok" }, roundOf(request));
        const expected = predict(plan, MAX_RETRIES);
        const { machine, runs } = agent();
        const events: AgentEmitted[] = [];
        const output = await runAgent(machine, input, { onEvent: (e) => events.push(e) });
        const requests = server.requests.length - first;
        outcomes[output.status === "succeeded" ? "succeeded" : "failed"] += 1;
        outcomes.faults += Math.min(requests, plan.length);

        expect({ status: output.status, requests, rounds: output.rounds }).toEqual({ status: expected.status, requests: expected.requests, rounds: expected.rounds });
        // Every attempt is accounted for in telemetry: one started event per request the server saw.
        expect(events.filter((e) => e.type === "model.call.started")).toHaveLength(requests);
        expect(events.filter((e) => e.type === "model.call.failed")).toHaveLength(requests - expected.rounds);
        if (output.status === "succeeded") {
          expect(output.messages).toEqual(COMPLETE);
          expect(output.finalAnswer).toBe(FINAL_TEXT);
          // Retries happen only before output reached the caller, so no text arrives twice.
          expect((output.state as { streamingOutput: string }).streamingOutput).toBe(FINAL_TEXT);
          expect(output.usage).toEqual({ promptTokens: 30, completionTokens: 12, totalTokens: 42 });
          expect(runs).toEqual(["Oslo"]);
        } else {
          const error = output.termination?.error;
          expect(output.termination?.reason).toBe("modelError");
          expect(error).toMatchObject({ name: "ModelError", endpoint: server.baseURL });
          expect(errorKindsOf(expected.fatal!)).toContain(error?.kind);
          if (expected.fatal!.kind === "status") expect(error?.status).toBe(expected.fatal!.status);
          expect(error?.message).toMatch(/^model call failed: /);
          // Nothing half-applied: the conversation is the complete one cut at a round boundary.
          expect(output.messages).toEqual(COMPLETE.slice(0, expected.rounds === 0 ? 1 : 3));
          expect(runs).toEqual(expected.rounds === 0 ? [] : ["Oslo"]);
        }
        // The key never leaves the client, whatever went wrong.
        expect(JSON.stringify([output, events])).not.toContain(SECRET_KEY);
      }),
      { numRuns: propertyRuns(80) },
    );
    await watch.stop();
    expect(watch.rejections).toEqual([]);
    expect(cases).toBeGreaterThanOrEqual(Math.min(50, propertyRuns(80)));
    if (cases >= 50) expect(outcomes.succeeded > 0 && outcomes.failed > 0 && outcomes.faults > cases).toBe(true);
    console.info(`fault runs: ${cases}, ${JSON.stringify(outcomes)}`);
  }, 300_000);

  it("a checkpointed run crashed right after any checkpoint resumes to the same result (memory and SQLite stores)", async () => {
    const watch = watchProcess();
    const retryableFault = faultArbitrary.filter(isRetryable);
    let cases = 0;
    const crashedIn = new Map<string, number>();
    await fc.assert(
      fc.asyncProperty(
        fc.tuple(fc.array(retryableFault, { maxLength: MAX_RETRIES }), fc.array(retryableFault, { maxLength: MAX_RETRIES })),
        // A clean run saves 4 checkpoints (AgentLLM, Executing, AgentLLM, final): crash after any of them, or not at all.
        fc.nat(4),
        fc.constantFrom("memory" as const, "sqlite" as const),
        fc.boolean(),
        async ([round0, round1], crashAt, storeKind, idempotent) => {
          cases += 1;
          // Each round's faults come in order, whichever process sends the request: they are the outside world's.
          const queues: Fault[][] = [[...round0], [...round1]];
          respond = (request) => {
            const round = roundOf(request);
            return replyFor(queues[round]!.shift() ?? { kind: "ok" }, round);
          };
          const store: MemoryCheckpointStore | SqliteCheckpointStore = storeKind === "sqlite" ? new SqliteCheckpointStore({ path: ":memory:" }) : new MemoryCheckpointStore();
          const runId = `crash-${cases}`;
          try {
            // Process 1: runs until just after checkpoint number `crashAt`, then dies.
            const first = agent({ idempotent, journal: store });
            const actor = createActor(first.machine, { input: { ...input, runId } });
            let saves = 0;
            let crashed = false;
            const stopped = new Promise<void>((resolve) => {
              const counting: CheckpointStore = {
                save: (id, record) => {
                  store.save(id, record);
                  saves += 1;
                  if (saves === crashAt + 1) {
                    crashed = true;
                    queueMicrotask(() => {
                      actor.stop();
                      resolve();
                    });
                  }
                },
                load: (id) => store.load(id),
                list: () => store.list(),
                delete: (id) => store.delete(id),
              };
              checkpointAgent(actor, counting);
              actor.subscribe({ complete: () => resolve(), error: () => resolve() });
            });
            actor.start();
            await stopped;

            // Process 2: everything new but the store; it continues from the last checkpoint.
            const second = agent({ idempotent, journal: store });
            const saved = store.load(runId)!;
            const where = crashed ? saved.state : "(no crash)";
            crashedIn.set(where, (crashedIn.get(where) ?? 0) + 1);
            let output: AgentOutput;
            if (!crashed) {
              output = actor.getSnapshot().output as AgentOutput;
            } else if (saved.status === "succeeded" || saved.status === "failed") {
              output = (saved.snapshot as { output: AgentOutput }).output;
            } else {
              output = await runAgent(second.machine, {}, { snapshot: restoreAgent(second.machine, saved), checkpoints: store });
            }

            expect(output.status).toBe("succeeded");
            expect(output.runId).toBe(runId);
            expect(output.usage).toEqual({ promptTokens: 30, completionTokens: 12, totalTokens: 42 });
            const runs = [...first.runs, ...second.runs];
            const observation = output.messages[2] as { content: string };
            if (idempotent) {
              // An idempotent tool may run again after a crash mid-call; the result is the same.
              expect(output.messages).toEqual(COMPLETE);
              expect(runs.length).toBeGreaterThanOrEqual(1);
            } else {
              // At most once: the tool never runs twice; a crash mid-call is reported, not repeated.
              expect(runs.length).toBeLessThanOrEqual(1);
              if (observation.content === "Oslo: sunny") {
                expect(runs).toEqual(["Oslo"]);
                expect(output.messages).toEqual(COMPLETE);
              } else {
                expect(observation.content).toMatch(/lookup was interrupted: .*may or may not have taken effect/);
                expect(output.messages.map((m) => m.role)).toEqual(COMPLETE.map((m) => m.role));
                expect(output.messages.at(-1)).toEqual(COMPLETE.at(-1));
              }
            }
            expect(store.load(runId)).toMatchObject({ status: "succeeded", state: "Succeeded" });
          } finally {
            if (store instanceof SqliteCheckpointStore) store.close();
          }
        },
      ),
      { numRuns: propertyRuns(30) },
    );
    await watch.stop();
    expect(watch.rejections).toEqual([]);
    expect(cases).toBeGreaterThanOrEqual(Math.min(30, propertyRuns(30)));
    console.info(`crash/resume runs: ${cases}, crashed after the checkpoint in: ${JSON.stringify(Object.fromEntries(crashedIn))}`);
    if (cases >= 30) {
      for (const state of ["Evaluating.ChildRunning.AgentLLM", "Evaluating.ChildRunning.ToolExecutor.Executing", "Succeeded"]) {
        expect(crashedIn.get(state) ?? 0, `no case crashed after the ${state} checkpoint`).toBeGreaterThan(0);
      }
    }
  }, 300_000);
});
