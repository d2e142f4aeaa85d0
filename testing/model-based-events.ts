import type { AnyEventObject } from "xstate";
import type { ApprovalTimerInput } from "../actors/approval-timer.js";
import { compactWith, type CompactionInput, type Summary } from "../actors/compaction.js";
import type { CallDecision, PreflightInput, PreflightOutput } from "../actors/guard.js";
import type { LLMInput } from "../actors/llm-step.js";
import type { ToolCall } from "../actors/messages.js";
import { ModelError, type Usage } from "../actors/model-client.js";
import type { GuardrailInput, GuardrailOutcome } from "../actors/guardrail.js";
import { SpendLimitError, type SpendBudget } from "../actors/spend.js";
import type { ExecutorInput } from "../actors/tool-executor.js";
import type { ReActConfig } from "../machines/contract/config.js";
import type { StateAccess } from "../machines/contract/state-access.js";
import { STATE_TAGS } from "../machines/contract/state-tags.js";
import { costBudgetSpent, tokenBudgetSpent } from "../machines/chart/spend.js";
import { decisionsUnder, predictOutcomes, PURE_CLOCK, scriptLabel, turnOf, type ModelTurnScript, type Policy, type PolicyDecision } from "./model-based-inputs.js";
import { awaitedBy, type AgentSnapshot, type Awaited } from "./model-based-pure.js";

/**
 * The abstraction the traversal works on, and what can happen in each of its states.
 *
 * `modelKey` is the coarse state: the state value plus the few counters that change what can
 * happen next (iteration, rounds, whether the token budget is spent, the batch of calls and
 * where each call's decision stands). Everything else in context (messages, history, texts)
 * is left out, so the state space stays small and finite.
 *
 * `EventCatalogue.eventsFor` lists what may arrive in a snapshot: the done/error events of the
 * invoked actor that is running (with realistic outputs, see model-based-inputs.ts: model turns
 * from the scripts, guard verdicts from the policy, tool outcomes predicted from the
 * decisions), its progress events,
 * and the commands a person can send (cancel, approve, reject). Events depend only on what the
 * key holds, so replaying a path's events reproduces its keys exactly.
 */

const UNKNOWN_CALL_ID = "no-such-call";

/** The summarizer's part in paths: what it writes and what that costs (the live replay's scripted summarizer says the same). */
export const SCRIPTED_SUMMARY: Summary = { text: "(summary of the earlier conversation)", usage: { promptTokens: 10, completionTokens: 5, totalTokens: 15 } };

export type ActorSrc =
  | "llm"
  | "guard"
  | "toolExecutor"
  | "approvalTimer"
  | "toolProviders"
  | "compaction"
  | "agent"
  | "inputGuardrails"
  | "parallelGuardrails"
  | "outputGuardrails"
  | "deadlineTimer";

/** The actors whose part the path plays by sending their outcome itself (replays never start them). */
export const PLAYED_BY_PATH: ReadonlySet<ActorSrc> = new Set(["inputGuardrails", "parallelGuardrails", "outputGuardrails", "deadlineTimer"]);

/** The verdicts a guardrail step is tried with: each one, and a crash. */
const GUARDRAIL_OUTCOMES: readonly { outcome: GuardrailOutcome; label: string }[] = [
  { outcome: { verdict: "pass" }, label: "pass" },
  { outcome: { verdict: "trip", guardrail: "scripted", reason: "tripped by the model-based test" }, label: "trip" },
  { outcome: { verdict: "retry", guardrail: "scripted", feedback: "try again (model-based test)" }, label: "send feedback" },
];

/** What an event is, for driving a live replay and for describing a path. */
export type EventKind =
  | { kind: "toolsReady" }
  | { kind: "toolsFailed" }
  /** The step host starts (again, after a restore): the state waiting on a step asks for it again. */
  | { kind: "stepsReady" }
  | { kind: "cancel" }
  | { kind: "approve"; callId: string }
  | { kind: "reject"; callId: string }
  | { kind: "progress"; src: ActorSrc }
  /** What a nested agent (agentTool, handoff) tells its parent: telemetry or where it stands. */
  | { kind: "nested" }
  | { kind: "done"; src: ActorSrc; output: unknown }
  | { kind: "error"; src: ActorSrc; error: unknown };

export function classifyEvent(event: AnyEventObject, machineId: string): EventKind {
  const srcOf = (id: string): ActorSrc => id.slice(machineId.length + 1) as ActorSrc;
  switch (event.type) {
    case "tools.ready":
      return { kind: "toolsReady" };
    case "tools.failed":
      return { kind: "toolsFailed" };
    case "steps.ready":
      return { kind: "stepsReady" };
    case "agent.cancel":
      return { kind: "cancel" };
    case "guard.approve":
      return { kind: "approve", callId: String(event["callId"]) };
    case "guard.reject":
      return { kind: "reject", callId: String(event["callId"]) };
    case "llm.progress":
      return { kind: "progress", src: "llm" };
    case "tool.progress":
      return { kind: "progress", src: "toolExecutor" };
    // The step host's answers (actors/step-host.ts).
    case "llm.done":
      return { kind: "done", src: "llm", output: event["output"] };
    case "llm.error":
      return { kind: "error", src: "llm", error: event["error"] };
    case "toolExecutor.done":
      return { kind: "done", src: "toolExecutor", output: event["output"] };
    case "toolExecutor.error":
      return { kind: "error", src: "toolExecutor", error: event["error"] };
    case "agent.status":
    case "agent.emitted":
      return { kind: "nested" };
  }
  if (event.type.startsWith("xstate.done.actor.")) return { kind: "done", src: srcOf(event.type.slice("xstate.done.actor.".length)), output: event["output"] };
  if (event.type.startsWith("xstate.error.actor.")) return { kind: "error", src: srcOf(event.type.slice("xstate.error.actor.".length)), error: event["error"] };
  throw new Error(`model-based testing: no replay is defined for event "${event.type}"`);
}

/** The coarse state of a snapshot (see the file comment). */
export function modelKey(snapshot: AgentSnapshot, access: StateAccess, config: ReActConfig): string {
  const { loop, state } = snapshot.context;
  const usage = access.read<Usage>(state, "usage");
  return JSON.stringify({
    value: snapshot.value,
    status: snapshot.status,
    iteration: loop.iteration,
    rounds: access.read<number>(state, "rounds"),
    spent: tokenBudgetSpent(config, snapshot.context, usage),
    // With a cost budget, input guardrails only (absent otherwise, so other agents' keys are unchanged).
    ...(config.maxBudgetCost !== undefined ? { costSpent: costBudgetSpent(config, snapshot.context, usage) } : {}),
    ...(loop.inputGuarded !== undefined ? { inputGuarded: loop.inputGuarded } : {}),
    // A call of an agent tool carries its arguments: whether they fit decides if a nested agent starts.
    calls: access.read<ToolCall[]>(state, "actions").map((call) => (`agent.${call.name}` in snapshot.machine.implementations.actors ? `${call.name} ${call.arguments}` : call.name)),
    decisions: loop.decisions.map((d) => `${d.status}${d.deadline !== undefined ? `/${d.onTimeout ?? "reject"}` : ""}`),
    termination: loop.termination?.reason ?? null,
    // Only agents with agent tools or handoffs have one (keys of other agents stay as they were).
    ...(loop.delegation
      ? {
          nested: {
            running: loop.delegation.current?.kind ?? null,
            queued: loop.delegation.queue.length,
            handoff: loop.delegation.handoff !== null,
            waitingOn: loop.delegation.pending.length,
            outcomes: loop.delegation.outcomes.length,
          },
        }
      : {}),
    // With `output` and `prepareRound` only (absent otherwise, so other agents' keys are unchanged).
    ...(loop.outputFailures !== undefined ? { outputFailures: loop.outputFailures } : {}),
    ...(loop.round?.tools !== undefined ? { offered: loop.round.tools } : {}),
  });
}

/** JSON for event identity in the traversal: errors keep their name and message. */
export function serializeEvent(event: AnyEventObject): string {
  return JSON.stringify(event, (_key, value: unknown) => (value instanceof Error ? { error: value.name, message: value.message } : value));
}

/** Without a policy every batch gets each of these verdicts in turn (by the call's index in the batch). */
const ENUMERATED_VERDICTS: readonly ((index: number) => PolicyDecision)[] = [
  () => ({ decision: "allow" }),
  () => ({ decision: "deny", reason: "denied by the model-based test" }),
  () => ({ decision: "pending", reason: "needs approval" }),
  (index) => (index === 0 ? { decision: "pending", timeoutMs: 60_000, onTimeout: "reject" } : { decision: "allow" }),
  (index) => (index === 0 ? { decision: "pending", timeoutMs: 60_000, onTimeout: "fail" } : { decision: "allow" }),
];

export interface CatalogueOptions {
  machineId: string;
  access: StateAccess;
  config: ReActConfig;
  scripts: readonly ModelTurnScript[];
  policy?: Policy;
}

export class EventCatalogue {
  /** Descriptions of generated events, for path descriptions. */
  private readonly labels = new WeakMap<object, string>();
  private readonly scripts: readonly ModelTurnScript[];

  constructor(private readonly options: CatalogueOptions) {
    const budget = options.config.maxBudgetTokens;
    const spender = options.scripts.find((script) => (script.toolCalls?.length ?? 0) > 0) ?? options.scripts[0];
    // With a token budget, one more turn spends it all (it must call tools for the loop to go on and notice).
    const spenders: ModelTurnScript[] = [];
    if (budget !== undefined && spender) spenders.push({ ...spender, label: `${scriptLabel(spender)}, spending the whole token budget`, usage: { promptTokens: budget, completionTokens: 0 } });
    // With a cost budget, one more turn costs it all (the scripted turns come from the model "scripted": price it).
    const cost = options.config.maxBudgetCost;
    const price = options.config.pricing?.["scripted"];
    if (cost !== undefined && price && price.input > 0 && spender) {
      spenders.push({ ...spender, label: `${scriptLabel(spender)}, spending the whole cost budget`, usage: { promptTokens: Math.ceil((cost * 1_000_000) / price.input), completionTokens: 0 } });
    }
    this.scripts = [...options.scripts, ...spenders];
  }

  labelOf(event: AnyEventObject): string {
    return this.labels.get(event) ?? event.type;
  }

  eventsFor(snapshot: AgentSnapshot): AnyEventObject[] {
    if (snapshot.status !== "active") return [];
    const actionsOf = (s: AgentSnapshot) => this.options.access.read<ToolCall[]>(s.context.state, "actions");
    const events: AnyEventObject[] = [];
    const add = (event: AnyEventObject, label: string) => {
      this.labels.set(event, label);
      events.push(event);
    };
    for (const child of awaitedBy(snapshot)) {
      const done = (output: unknown, label: string) => add({ type: child.done, output }, label);
      const error = (message: string, label: string) => add({ type: child.error, error: new Error(message) }, label);
      if (child.src.startsWith("agent.")) {
        this.nestedAgentEvents(snapshot, child, add);
        continue;
      }
      switch (child.src) {
        case "toolProviders":
          if (snapshot.hasTag(STATE_TAGS.startingTools)) add({ type: "tools.ready", tools: snapshot.context.loop.tools }, "tools ready");
          // A restored run waits for approval while its providers start again: their ready releases held decisions.
          else if (snapshot.hasTag(STATE_TAGS.approval)) {
            add({ type: "tools.ready", tools: snapshot.context.loop.tools }, "tools ready again (after a restore)");
          }
          break;
        case "llm": {
          const input = child.input as LLMInput;
          for (const script of this.scripts) done(turnOf(script, input.rounds + 1), `model ${scriptLabel(script)}`);
          add({ type: "llm.progress", progress: [{ at: PURE_CLOCK, event: { type: "text.delta", delta: "Thinking " } }] }, "model streams text");
          add({ type: "llm.progress", progress: [{ at: PURE_CLOCK, event: { type: "reasoning.delta", delta: "Considering the tools. " } }] }, "model streams its reasoning");
          add(
            { type: child.error, error: new ModelError("the model call failed (scripted)", { kind: "script", model: "scripted" }) },
            "model call fails",
          );
          this.refusals(child.error, "model call", add);
          break;
        }
        case "guard": {
          const input = child.input as PreflightInput;
          for (const { label, decisions } of this.verdicts(input.calls)) done({ decisions } satisfies PreflightOutput, `guard: ${label}`);
          error("the guard step crashed (scripted)", "guard step crashes");
          break;
        }
        case "toolExecutor": {
          const input = child.input as ExecutorInput;
          const output = predictOutcomes(input, snapshot.context.loop.tools);
          done(output, `tools run: ${output.outcomes.map((o) => `${o.name} ${o.status}`).join(", ")}`);
          const first = output.outcomes.find((o) => o.status === "ok" || o.status === "error");
          const call = first && input.calls.find((c) => c.id === first.callId);
          if (call) {
            add(
              { type: "tool.progress", progress: [{ at: PURE_CLOCK, event: { type: "tool.call.started", callId: call.id, name: call.name, arguments: call.arguments } }] },
              `${call.name} starts`,
            );
          }
          error("the tool executor crashed (scripted)", "tool executor crashes");
          break;
        }
        case "compaction": {
          const input = child.input as CompactionInput;
          // A summary comes from the scripted summarizer's model ("scripted", as in the replay): its price makes the summary's cost.
          const output = input.strategy === "summarize" ? { ...compactWith(input, SCRIPTED_SUMMARY), model: "scripted" } : compactWith(input);
          done(output, `${input.strategy === "trim" ? "old messages trimmed" : "old messages summarized"}`);
          error("compaction failed (scripted)", "compaction fails");
          this.refusals(child.error, "summary", add);
          break;
        }
        case "inputGuardrails":
        case "parallelGuardrails":
        case "outputGuardrails": {
          if ((child.input as GuardrailInput | undefined)?.skip) break;
          const what = child.src === "outputGuardrails" ? "output" : child.src === "inputGuardrails" ? "input" : "parallel input";
          for (const { outcome, label } of GUARDRAIL_OUTCOMES) done(outcome, `${what} guardrails ${label}`);
          error("the guardrail step crashed (scripted)", `${what} guardrail step crashes`);
          break;
        }
        case "deadlineTimer": {
          const input = child.input as ApprovalTimerInput;
          if (input.deadline !== null) done({ firedAt: input.deadline }, "the run's deadline passes");
          break;
        }
        case "approvalTimer": {
          const input = child.input as ApprovalTimerInput;
          if (input.deadline !== null) done({ firedAt: input.deadline }, "the approval deadline passes");
          break;
        }
      }
    }
    // A restored run's step host starts again; a state waiting on a step asks it again (a live host still running it ignores that).
    if (awaitedBy(snapshot).some((awaited) => awaited.hosted)) add({ type: "steps.ready" }, "the step host starts (again, after a restore)");
    if (snapshot.hasTag(STATE_TAGS.approval)) {
      for (const d of snapshot.context.loop.decisions.filter((d) => d.status === "pending")) {
        add({ type: "guard.approve", callId: d.callId }, `approve ${d.name}`);
        add({ type: "guard.reject", callId: d.callId, reason: "rejected by the model-based test" }, `reject ${d.name}`);
      }
      // A nested agent's call: the decision is passed down (the nested agent then reports it stopped waiting).
      for (const p of snapshot.context.loop.delegation?.pending ?? []) {
        const path = p.agentPath ? { agentPath: p.agentPath } : {};
        add({ type: "guard.approve", callId: p.callId, ...path }, `approve the nested agent's ${p.name}`);
        add({ type: "guard.reject", callId: p.callId, ...path, reason: "rejected by the model-based test" }, `reject the nested agent's ${p.name}`);
      }
      add({ type: "guard.approve", callId: UNKNOWN_CALL_ID }, "approve a call that is not waiting (refused)");
    } else {
      // A late or stray decision (e.g. for a call that already ran): the machine must refuse it, not drop it.
      const late = actionsOf(snapshot).at(-1);
      const callId = late?.id ?? UNKNOWN_CALL_ID;
      add({ type: "guard.approve", callId }, `approve ${late ? late.name : "an unknown call"} late (refused)`);
      add({ type: "guard.reject", callId, reason: "too late" }, `reject ${late ? late.name : "an unknown call"} late (refused)`);
    }
    add({ type: "agent.cancel", reason: "cancelled by the model-based test" }, "cancel");
    // A command that does not fit its schema is refused: the run goes on unchanged.
    add({ type: "agent.cancel", reason: 42 }, "cancel with a reason that is not text (refused)");
    add({ type: "tools.failed", error: { name: "ToolProviderError", message: "a tool provider failed (scripted)" } }, "tool providers fail");
    return events;
  }

  /**
   * A nested agent's part, while it runs: it answers, fails or crashes (in Delegating and
   * HandingOff), reports a model reply (its usage counts here), and starts or stops waiting for
   * an approval. Its answer is fixed text: what it says does not change the parent's chart.
   */
  private nestedAgentEvents(snapshot: AgentSnapshot, { id, done, error }: Awaited, add: (event: AnyEventObject, label: string) => void): void {
    const delegation = snapshot.context.loop.delegation;
    const current = delegation?.current;
    if (!delegation || !current) return;
    const running = snapshot.hasTag(STATE_TAGS.nestedAgent);
    if (running) {
      const usage = { promptTokens: 0, completionTokens: 0, totalTokens: 0 };
      const output = (status: "succeeded" | "failed") => ({
        status,
        finalAnswer: status === "succeeded" ? "nested answer" : null,
        messages: [],
        rounds: 1,
        usage,
        toolEffects: [],
        iterations: 0,
        runId: "nested-run",
        state: {},
        ...(status === "failed" ? { termination: { reason: "modelError", iterations: 0 } } : {}),
      });
      add({ type: done, output: output("succeeded") }, `${current.agent} answers`);
      add({ type: done, output: output("failed") }, `${current.agent} fails`);
      add({ type: error, error: new Error("the nested agent crashed (scripted)") }, `${current.agent} crashes`);
      if (delegation.pending.length === 0) add({ type: "agent.status", from: id, pending: [], moment: "working" }, `${current.agent} reaches a checkpoint`);
    }
    const reply = { type: "reply.completed", agent: current.agent, runId: "nested-run", iteration: 0, timestamp: PURE_CLOCK, round: 1, toolCalls: 0, finishReason: "stop", usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2 }, model: "scripted" };
    add({ type: "agent.emitted", from: id, event: reply }, `${current.agent} replies`);
    if (delegation.pending.length === 0) {
      const pending = [{ callId: "nested-call", name: "nested_tool", arguments: "{}", reason: "needs approval" }];
      add({ type: "agent.status", from: id, pending, moment: "waiting" }, `${current.agent} waits for approval`);
    } else {
      add({ type: "agent.status", from: id, pending: [], moment: "decided" }, `${current.agent} stops waiting`);
    }
  }

  /** A model call (or summary) refused before it is made, over either budget (`failed`: the step's error event): any agent may run nested, with its caller's grant of both. */
  private refusals(failed: string, what: string, add: (event: AnyEventObject, label: string) => void): void {
    const budgets: SpendBudget[] = ["tokenBudget", "costBudget"];
    for (const budget of budgets) {
      const error = new SpendLimitError(budget, `not calling the model: over the ${budget} (scripted)`);
      add({ type: failed, error }, `${what} refused: it would cross the ${budget === "tokenBudget" ? "token" : "cost"} budget`);
    }
  }

  private verdicts(calls: readonly ToolCall[]): { label: string; decisions: CallDecision[] }[] {
    const describe = (decisions: CallDecision[]) => decisions.map((d) => `${d.name} ${d.status}${d.deadline !== undefined ? ` (deadline, ${d.onTimeout})` : ""}`).join(", ");
    const policy = this.options.policy;
    if (policy) {
      const decisions = decisionsUnder(policy, calls, PURE_CLOCK);
      return [{ label: describe(decisions), decisions }];
    }
    return ENUMERATED_VERDICTS.map((verdict) => {
      const decisions = decisionsUnder((call) => verdict(calls.findIndex((c) => c.id === call.id)), calls, PURE_CLOCK);
      return { label: describe(decisions), decisions };
    });
  }
}
