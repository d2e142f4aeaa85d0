import { isDeepStrictEqual } from "node:util";
import type { AssistantMessage, Message } from "../../actors/messages.js";
import type { AgentEmitted } from "../../machines/contract/events.js";
import { budgetRefusalPoints, expectedOutcome, isDeterministic, type ToolName } from "./loop-scenario.js";
import type { Observation } from "./loop-driver.js";
import { EDITED_ARGS } from "./loop-tools.js";

/*
 * The invariants every generated run must keep. Each check throws with a sentence saying what
 * broke, so fast-check's counterexample reads as a bug report.
 */

class InvariantError extends Error {
  override name = "InvariantError";
}

function check(condition: boolean, message: () => string): asserts condition {
  if (!condition) throw new InvariantError(message());
}

/** Room for the truncation marker and the "Error: <tool> failed: " prefix of an error observation. */
const MARKER_ALLOWANCE = 250;

const ofType = <T extends AgentEmitted["type"]>(events: readonly AgentEmitted[], type: T) =>
  events.filter((e): e is Extract<AgentEmitted, { type: T }> => e.type === type);

const key = (iteration: number, callId: string) => `${iteration}:${callId}`;

export function checkInvariants(obs: Observation): void {
  const { scenario, events } = obs;

  // 1. The run ends in a final state with a typed outcome; runAgent never rejects for these faults.
  check(obs.rejected === undefined, () => `runAgent rejected: ${String(obs.rejected)}`);
  const output = obs.output;
  check(output !== undefined, () => "runAgent resolved without an output");
  check(output.status === "succeeded" || output.status === "failed", () => `status ${String(output.status)}`);
  if (output.status === "succeeded") {
    check(output.termination === undefined, () => "a succeeded run carries a termination");
    check(typeof output.finalAnswer === "string", () => "a succeeded run has no final answer");
  } else {
    const reason = output.termination?.reason;
    const allowed = new Set<string>(["maxIterations", "modelError"]);
    if (scenario.maxBudgetTokens !== undefined) allowed.add("tokenBudget");
    if (obs.cancelled) allowed.add("cancelled");
    const failingDeadline = scenario.turns.some((t) => t.kind === "calls" && t.calls.some((c) => c.verdict.kind === "pending" && c.verdict.timeout?.onTimeout === "fail"));
    if (failingDeadline) allowed.add("approvalTimeout");
    check(reason !== undefined && allowed.has(reason), () => `failed with reason ${String(reason)}, expected one of ${[...allowed].join(", ")}`);
    if (reason === "modelError") check((output.termination?.error?.message ?? "") !== "", () => "modelError without the error");
  }
  if (isDeterministic(scenario)) {
    const expected = expectedOutcome(scenario);
    // Or a call refused before it was made, its prompt alone crossing the budget (the error says so).
    const refused =
      output.termination?.reason === "tokenBudget" &&
      output.termination.error?.name === "SpendLimitError" &&
      budgetRefusalPoints(scenario).some((point) => point.rounds === output.rounds && point.totalTokens === output.usage.totalTokens);
    check(
      refused ||
        (output.status === expected.status && output.termination?.reason === expected.reason && output.rounds === expected.rounds && output.usage.totalTokens === expected.totalTokens),
      () => `expected ${JSON.stringify(expected)}, got ${JSON.stringify({ status: output.status, reason: output.termination?.reason, rounds: output.rounds, totalTokens: output.usage.totalTokens })}`,
    );
  }

  // 2. Telemetry ends with exactly one loop.terminated that agrees with the output; nothing after it.
  const terminated = ofType(events, "loop.terminated");
  check(terminated.length === 1 && events[events.length - 1]?.type === "loop.terminated", () => `loop.terminated ${terminated.length} times, last event ${events[events.length - 1]?.type}`);
  check(terminated[0]!.status === output.status && terminated[0]!.reason === output.termination?.reason, () => "loop.terminated disagrees with the output");
  check(obs.lateEvents.length === 0, () => `events after loop.terminated: ${obs.lateEvents.map((e) => e.type).join(", ")}`);
  for (const event of events) {
    check(event.agent === "ReActAgent" && event.runId === output.runId && Number.isInteger(event.iteration) && Number.isFinite(event.timestamp), () => `event ${event.type} lacks its base fields`);
  }

  // 3. No tool runs without an allow verdict or an approval, and none runs more often than that.
  const authorizations = new Map<string, number>();
  const add = (k: string) => authorizations.set(k, (authorizations.get(k) ?? 0) + 1);
  for (const v of obs.verdicts) if (v.kind === "allow") add(key(v.iteration, v.callId));
  const decided = ofType(events, "guard.approval.decided");
  for (const d of decided) if (d.decision === "approved") add(key(d.iteration, d.callId));
  const runs = new Map<string, number>();
  for (const e of obs.executions) runs.set(key(e.iteration, e.callId), (runs.get(key(e.iteration, e.callId)) ?? 0) + 1);
  for (const [k, count] of runs) {
    check(count <= (authorizations.get(k) ?? 0), () => `call ${k} ran ${count} time(s) with ${authorizations.get(k) ?? 0} allow/approval(s)`);
  }
  // An approved edit is what the tool got.
  for (const d of decided) {
    if (d.decision !== "approved" || !d.edited) continue;
    for (const e of obs.executions.filter((x) => x.iteration === d.iteration && x.callId === d.callId)) {
      check(isDeepStrictEqual(e.args, EDITED_ARGS[e.tool as ToolName]), () => `call ${d.callId} was approved with edits but ran with ${JSON.stringify(e.args).slice(0, 80)}`);
    }
  }

  // 4. Each call of an assistant turn gets exactly one tool message, in call order, right after it;
  //    only the last turn of a failed run may be left unanswered (the run stopped before executing it).
  const messages = output.messages;
  const lastAssistant = messages.map((m) => m.role).lastIndexOf("assistant");
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]!;
    if (message.role === "tool") {
      const previous = messages.slice(0, i).reverse().find((m) => m.role !== "tool");
      check(previous?.role === "assistant" && (previous.toolCalls?.length ?? 0) > 0, () => `tool message ${message.toolCallId} answers no call`);
      continue;
    }
    if (message.role !== "assistant" || !message.toolCalls?.length) continue;
    const ids = message.toolCalls.map((c) => c.id);
    check(new Set(ids).size === ids.length, () => `one assistant turn holds duplicate call ids: ${ids.join(", ")}`);
    const answers: string[] = [];
    for (let j = i + 1; j < messages.length && messages[j]!.role === "tool"; j++) answers.push((messages[j] as { toolCallId: string }).toolCallId);
    const unanswered = answers.length === 0 && i === lastAssistant && output.status === "failed";
    check(unanswered || isDeepStrictEqual(answers, ids), () => `calls ${ids.join(", ")} got tool messages ${answers.join(", ") || "(none)"}`);
  }

  // 5. The message history only grows: every snapshot's messages extend the previous snapshot's.
  let previous: Message[] = [];
  for (const current of [...obs.messageSnapshots, messages]) {
    check(current.length >= previous.length, () => `messages shrank from ${previous.length} to ${current.length}`);
    for (let i = 0; i < previous.length; i++) {
      check(current[i] === previous[i] || isDeepStrictEqual(current[i], previous[i]), () => `message ${i} changed between snapshots`);
    }
    previous = current;
  }

  // 6. Usage totals are the sum of the replies the run applied (and of every model call when none was cut short).
  const sum = (usages: { promptTokens: number; completionTokens: number; totalTokens: number }[]) =>
    usages.reduce((a, u) => ({ promptTokens: a.promptTokens + u.promptTokens, completionTokens: a.completionTokens + u.completionTokens, totalTokens: a.totalTokens + u.totalTokens }), {
      promptTokens: 0,
      completionTokens: 0,
      totalTokens: 0,
    });
  const replied = sum(ofType(events, "reply.completed").map((e) => e.usage));
  check(isDeepStrictEqual(output.usage, replied), () => `usage ${JSON.stringify(output.usage)} is not the sum of the replies ${JSON.stringify(replied)}`);
  check(isDeepStrictEqual(terminated[0]!.usage, output.usage), () => "loop.terminated reports other usage than the output");
  if (!obs.cancelled) {
    const called = sum(ofType(events, "model.call.completed").map((e) => e.usage));
    check(isDeepStrictEqual(output.usage, called), () => `usage ${JSON.stringify(output.usage)} is not the sum of the model calls ${JSON.stringify(called)}`);
  }

  // 7. Whatever was still running when the run ended had its signal aborted; nothing keeps running unseen.
  for (const call of obs.inFlightAtEnd) check(call.aborted, () => `${call.what} was still running after the run ended, its signal not aborted`);
  check(obs.signalListeners === 0, () => `${obs.signalListeners} abort listener(s) left on the caller's signal`);

  // 8. No observation blows the context: outputs and errors are cut to maxToolOutputChars with a marker.
  const limit = scenario.maxToolOutputChars + MARKER_ALLOWANCE;
  for (const message of messages) {
    if (message.role === "tool") check(message.content.length <= limit, () => `a tool message of ${message.content.length} chars (limit ${scenario.maxToolOutputChars})`);
  }
  for (const e of ofType(events, "tool.call.completed")) check(e.output.length <= limit, () => `tool.call.completed carries ${e.output.length} chars`);
  for (const e of ofType(events, "tool.call.failed")) check(e.error.length <= limit, () => `tool.call.failed carries ${e.error.length} chars`);
  for (const e of obs.executions) {
    if (e.tool === "big" && typeof e.args["n"] === "number" && e.args["n"] > scenario.maxToolOutputChars) {
      const completed = ofType(events, "tool.call.completed").find((c) => c.iteration === e.iteration && c.callId === e.callId);
      if (completed) check(completed.output.includes("[output truncated:"), () => "a long output was cut without the marker");
    }
  }

  // 9. toolEffects holds the tags of tools that completed (all of them unless a cancel dropped a batch).
  const tags: Record<string, string> = { echo: "read", big: "bulk" };
  const completedTags = new Set(ofType(events, "tool.call.completed").flatMap((e) => (tags[e.name] ? [tags[e.name]!] : [])));
  const effects = new Set(output.toolEffects);
  for (const tag of effects) check(completedTags.has(tag), () => `toolEffects has "${tag}" but no tool with that tag completed`);
  if (!obs.cancelled) {
    check(isDeepStrictEqual(effects, completedTags), () => `toolEffects ${[...effects].join(",")} vs completed tags ${[...completedTags].join(",")}`);
  }

  // 10. The final answer of a succeeded run is the last assistant text.
  if (output.status === "succeeded") {
    const last = messages[lastAssistant] as AssistantMessage | undefined;
    check((last?.content ?? "") === output.finalAnswer, () => "the final answer is not the last assistant turn");
  }
}
