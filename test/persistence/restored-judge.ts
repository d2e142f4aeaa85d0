import { createActor } from "xstate";
import { expect } from "vitest";
import { defineGuardrail, type Guardrail } from "../../actors/guardrail.js";
import { human } from "../../actors/messages.js";
import type { ModelClient, ModelRequest } from "../../actors/model-client.js";
import { resolveModelClient } from "../../actors/openai/openai-model-client.js";
import type { ToolJournal } from "../../actors/tool-journal.js";
import type { AgentEmitted } from "../../machines/contract/events.js";
import { checkpointAgent } from "../../machines/persistence/checkpoints/checkpoint-agent.js";
import type { RunLogStore } from "../../machines/persistence/log/log-store.js";
import { restoreAgent } from "../../machines/persistence/persistence.js";
import { createReactMachine, type ReactMachineOptions } from "../../machines/react-machine.js";
import { runAgent } from "../../machines/runner.js";
import type { OpenAIServer } from "../../testing/openai-server.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import { silentModel } from "./restored-spend.js";

/*
 * The two processes of the restored judge-spend tests (test/persistence/restored-judge-spend.test.ts,
 * test/postgres/judge-spend.test.ts): the first one's output guardrail asks a judge that never
 * answers, and it stops (as if it died) once that call is out; the next one resumes the run from its
 * last checkpoint over a loopback server (restored-spend.ts's `pricedServer`).
 */

export const PRICING = { "priced-model": { input: 1, output: 4 } };

/** An output guardrail asking `judge` (through the run's budget) whether the answer may stand. */
export function judging(judge: ModelClient): Guardrail {
  return defineGuardrail({
    name: "judge",
    async check(subject, ctx) {
      const turn = await ctx.budgeted(judge).complete({ model: "priced-model", messages: [human(`Is this answer fine? ${subject.text}`)], tools: [], maxTokens: 300 }, { signal: ctx.signal });
      return turn.content === "done" ? { verdict: "pass" } : { verdict: "trip", reason: turn.content };
    },
  });
}

export type Options = Pick<ReactMachineOptions, "config">;
export type Store = RunLogStore & ToolJournal;

/** The first process: the agent answers, and its judge never does; stopped (as if it died) once the judge's call is out. */
export async function stoppedWhileJudging(options: Options, store: Store) {
  const judge = silentModel();
  const model = scriptedModel([{ content: "The quarter went well.", usage: { promptTokens: 30, completionTokens: 6 } }], { model: "priced-model" });
  const machine = createReactMachine({ ...options, journal: store, modelClient: model, outputGuardrails: [judging(judge.client)] });
  const actor = createActor(machine, { input: { messages: [human("Summarise the quarter.")], runId: "run-1" } });
  const checkpoints = checkpointAgent(actor, store);
  actor.start();
  await expect.poll(() => judge.requests.length, { timeout: 10_000 }).toBe(1);
  actor.stop();
  await checkpoints.flush();
  const saved = await store.load("run-1");
  // The last checkpoint: the reply this process got, and the judging after it, are lost with it.
  expect(saved!.state).toBe("Evaluating.ChildRunning.AgentLLM");
  return { store, saved: saved!, lostReply: bound(model.requests[0]!), lostJudge: bound(judge.requests[0]!), lostJudgeCall: judge.requests[0]! };
}

/** The next process: the same agent and judge over the loopback server, restored from `saved`; the judge's requests as the guardrail sent them. */
export async function resumed(server: OpenAIServer, options: Options, saved: unknown, store: Store, journal: ToolJournal = store) {
  const client = resolveModelClient({ baseURL: server.baseURL, apiKey: "test-key", model: "priced-model", stream: false, resilience: { maxRetries: 0 } });
  const judged: ModelRequest[] = [];
  const judge: ModelClient = { ...client, complete: (request, callOptions) => (judged.push(request), client.complete(request, callOptions)) };
  const machine = createReactMachine({ ...options, journal, modelClient: client, outputGuardrails: [judging(judge)] });
  const events: AgentEmitted[] = [];
  const before = server.requests.length;
  const output = await runAgent(machine, {}, { snapshot: restoreAgent(machine, saved), checkpoints: store, onEvent: (event) => events.push(event) });
  const terminated = events.find((event): event is Extract<AgentEmitted, { type: "loop.terminated" }> => event.type === "loop.terminated" && event.agentPath === undefined);
  return { output, terminated, judged, sent: server.requests.length - before };
}

/** What a lost call may have cost: its prompt as the budget sized it, and its cap, at PRICING (nothing without a budget). */
export function bound(request: ModelRequest) {
  if (!request.spend) return { tokens: 0, cost: 0 };
  const promptTokens = request.spend.promptTokens;
  const completionTokens = request.maxTokens!;
  return { tokens: promptTokens + completionTokens, cost: (promptTokens * 1 + completionTokens * 4) / 1_000_000 };
}

