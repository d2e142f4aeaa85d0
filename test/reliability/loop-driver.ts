import { getEventListeners } from "node:events";
import type fc from "fast-check";
import type { AnyActorRef, InspectionEvent } from "xstate";
import type { Guard, GuardDecision } from "../../actors/guard.js";
import { human, type Message } from "../../actors/messages.js";
import { ModelError, type ModelClient } from "../../actors/model-client.js";
import type { AgentOutput } from "../../machines/contract/context.js";
import type { AgentEmitted } from "../../machines/contract/events.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { runAgent } from "../../machines/runner.js";
import { scriptedModel, type ScriptedResponse } from "../../testing/scripted-model.js";
import type { Answer, Scenario, StrayCommand, ToolName } from "./loop-scenario.js";
import { argumentsFor, EDITED_ARGS, gate, instrumentedTools, type Execution } from "./loop-tools.js";

/** One model call as the wrapped client saw it. */
export interface ModelCallRecord {
  signal: AbortSignal | undefined;
  settled: boolean;
}

/** What the guard decided for one call (by iteration and call id, in batch order). */
export interface VerdictRecord {
  iteration: number;
  callId: string;
  tool: string;
  kind: "allow" | "deny" | "throw" | "invalid" | "pending";
}

/** Everything a run produced, for the invariants to judge. */
export interface Observation {
  scenario: Scenario;
  output?: AgentOutput;
  rejected?: unknown;
  events: AgentEmitted[];
  /** Events emitted after `loop.terminated` (there must be none). */
  lateEvents: AgentEmitted[];
  /** The `messages` field of every root snapshot, in order. */
  messageSnapshots: Message[][];
  executions: Execution[];
  modelCalls: ModelCallRecord[];
  verdicts: VerdictRecord[];
  /** Set when the driver cancelled the run (by event or signal). */
  cancelled: boolean;
  /** Listeners left on the long-lived signal passed to runAgent. */
  signalListeners: number;
  /** Model and tool calls still running when runAgent resolved, and whether their signal was aborted by then. */
  inFlightAtEnd: { what: string; aborted: boolean }[];
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function scriptOf(scenario: Scenario): ScriptedResponse[] {
  return scenario.turns.map((turn, turnIndex): ScriptedResponse => {
    if (turn.kind === "error") return new ModelError(`HTTP ${turn.status}: scripted failure`, { kind: "http", status: turn.status });
    const base = { content: turn.text, usage: turn.usage };
    if (turn.kind === "text") return base;
    return {
      ...base,
      toolCalls: turn.calls.map((call, index) => ({
        id: call.id === "fresh" ? `c${turnIndex}_${index}` : call.id === "reused" ? "call_0" : "",
        name: call.tool,
        arguments: argumentsFor(call.tool, call.args),
      })),
    };
  });
}

/**
 * Run one scenario to its end under the fast-check scheduler and record everything. Model
 * replies, slow tools and the approver's commands are scheduler tasks, so their order is the
 * scheduler's choice; approval deadlines and tool timeouts are real (few-millisecond) timers.
 */
export async function runScenario(scenario: Scenario, scheduler: fc.Scheduler, longLived: AbortSignal): Promise<Observation> {
  const events: AgentEmitted[] = [];
  const lateEvents: AgentEmitted[] = [];
  const messageSnapshots: Message[][] = [];
  const modelCalls: ModelCallRecord[] = [];
  const verdicts: VerdictRecord[] = [];
  const plans = new Map<string, { answer: Answer; tool: ToolName }>();
  let root: AnyActorRef | undefined;
  let settled = false;
  let terminated = false;
  let cancelled = false;
  let iteration = 0;
  let releases = 0;
  const controller = new AbortController();

  const send = (event: { type: string; [key: string]: unknown }) => {
    // Commands still queued in the scheduler after the end go nowhere (a stopped actor only warns).
    if (!settled && !terminated) root?.send(event as never);
  };
  const cancel = () => {
    if (cancelled || settled || terminated) return;
    cancelled = true;
    if (scenario.cancel?.via === "signal") controller.abort();
    else send({ type: "agent.cancel", reason: "the property test cancelled it" });
  };
  const onRelease = () => {
    releases += 1;
    if (scenario.cancel?.at === "task" && releases === scenario.cancel.n) cancel();
  };

  const inner = scriptedModel(scriptOf(scenario));
  const model: ModelClient = {
    description: "scheduled scripted model",
    async complete(request, options = {}) {
      const record: ModelCallRecord = { signal: options.signal, settled: false };
      modelCalls.push(record);
      try {
        await gate(scheduler, "model", options.signal, onRelease).catch(() => {
          throw new ModelError("the model call was aborted", { kind: "aborted" });
        });
        return await inner.complete(request, options);
      } finally {
        record.settled = true;
      }
    },
  };

  const guard: Guard = (call, ctx): GuardDecision => {
    const turn = scenario.turns[ctx.iteration];
    const index = ctx.batch.indexOf(call);
    const spec = turn?.kind === "calls" ? turn.calls[index] : undefined;
    const verdict = spec?.verdict ?? { kind: "allow" as const };
    verdicts.push({ iteration: ctx.iteration, callId: call.id, tool: call.name, kind: verdict.kind });
    switch (verdict.kind) {
      case "allow":
        return { decision: "allow" };
      case "deny":
        return { decision: "deny", reason: "the property test denied it" };
      case "throw":
        throw new Error("the guard broke");
      case "invalid":
        return { decision: "maybe" } as unknown as GuardDecision;
      case "pending":
        plans.set(`${ctx.iteration}:${call.id}`, { answer: verdict.answer, tool: call.name as ToolName });
        return {
          decision: "pending",
          reason: "a person must look at it",
          ...(verdict.timeout ? { timeoutMs: verdict.timeout.ms, onTimeout: verdict.timeout.onTimeout } : {}),
        };
    }
  };

  const { tools, executions } = instrumentedTools(scheduler, () => iteration, onRelease);
  const machine = createReactMachine({
    modelClient: model,
    tools,
    constraints: [guard],
    config: {
      maxIterations: scenario.maxIterations,
      maxToolOutputChars: scenario.maxToolOutputChars,
      toolExecution: scenario.toolExecution,
      ...(scenario.maxBudgetTokens !== undefined ? { maxBudgetTokens: scenario.maxBudgetTokens } : {}),
    },
  });

  /** The approver: each answer is a sequence of commands, interleaved with everything else by the scheduler. */
  const answerPending = (callId: string, at: number) => {
    const plan = plans.get(`${at}:${callId}`);
    if (!plan) return;
    const approve = { type: "guard.approve", callId };
    const steps: { type: string; [key: string]: unknown }[] = (() => {
      switch (plan.answer) {
        case "approve":
          return [approve];
        case "approveEdited":
          // A refused edit (the tool does not exist) is followed by a plain approval.
          return [{ ...approve, args: EDITED_ARGS[plan.tool] }, approve];
        case "badEditThenApprove":
          return [{ ...approve, args: '{"broken": ' }, { ...approve, args: { text: 5, ms: "x", loud: 1, n: -3 } }, approve];
        case "reject":
          return [{ type: "guard.reject", callId, reason: "not today" }];
        case "rejectTwice":
          return [{ type: "guard.reject", callId, reason: "no" }, { type: "guard.reject", callId, reason: "still no" }];
        case "unknownThenApprove":
          return [{ type: "guard.approve", callId: `${callId}-nope` }, approve];
        case "cancel":
          return [{ type: "agent.cancel", reason: "the approver cancelled" }];
        case "ignore":
          return [];
      }
    })();
    if (steps.length === 0) return;
    scheduler.scheduleSequence(
      steps.map((step) => ({
        label: `${step.type} ${callId}`,
        builder: async () => {
          if (step.type === "agent.cancel") {
            if (!cancelled && !settled && !terminated) {
              cancelled = true;
              send(step);
            }
            return;
          }
          send(step);
        },
      })),
    );
  };

  const stray = (command: StrayCommand) => {
    const lastDecided = [...events].reverse().find((e) => e.type === "guard.approval.decided");
    switch (command.kind) {
      case "approveUnknown":
        return send({ type: "guard.approve", callId: "no-such-call" });
      case "rejectUnknown":
        return send({ type: "guard.reject", callId: "no-such-call", reason: "stray" });
      case "unknownType":
        return send({ type: "no.such.event", payload: { anything: true } });
      case "approveMalformed":
        return send({ type: "guard.approve", callId: 42, args: 17 });
      case "approveDecided":
        return lastDecided && "callId" in lastDecided ? send({ type: "guard.approve", callId: lastDecided.callId }) : undefined;
    }
  };

  const onEvent = (event: AgentEmitted) => {
    if (terminated) {
      lateEvents.push(event);
      return;
    }
    events.push(event);
    iteration = event.iteration;
    if (event.type === "loop.terminated") terminated = true;
    if (event.type === "guard.approval.requested") answerPending(event.callId, event.iteration);
    for (const s of scenario.strays) if (s.atEvent === events.length) stray(s.command);
    if (scenario.cancel?.at === "event" && scenario.cancel.n === events.length) cancel();
  };

  const inspect = (event: InspectionEvent) => {
    if (event.type === "@xstate.actor" && event.rootId === event.actorRef.sessionId) root = event.actorRef as AnyActorRef;
    if (event.type === "@xstate.snapshot" && event.actorRef === root) {
      const context = (event.snapshot as { context?: { state?: { messages?: Message[] } } }).context;
      if (context?.state?.messages) messageSnapshots.push(context.state.messages);
    }
  };

  // The caller's long-lived signal, and a per-run one the driver may abort: runAgent takes one.
  const signal = scenario.cancel?.via === "signal" ? controller.signal : longLived;
  const observation: Observation = {
    scenario,
    events,
    lateEvents,
    messageSnapshots,
    executions,
    modelCalls,
    verdicts,
    cancelled: false,
    signalListeners: 0,
    inFlightAtEnd: [],
  };
  const noteInFlight = () => {
    for (const call of modelCalls) if (!call.settled) observation.inFlightAtEnd.push({ what: "model call", aborted: call.signal?.aborted === true });
    for (const run of executions) if (!run.settled) observation.inFlightAtEnd.push({ what: `tool ${run.tool} (${run.callId})`, aborted: run.signal.aborted });
  };
  // The driver answers approvals itself, as events at scheduled moments (answerPending); an onApproval
  // that never answers keeps runAgent from handing back a run that waits for them (it would, with none).
  const onApproval = () => new Promise<never>(() => undefined);
  const run = runAgent(machine, { messages: [human("go")] }, { signal, onEvent, inspect, onApproval }).then(
    (output) => {
      noteInFlight();
      observation.output = output;
    },
    (error: unknown) => {
      observation.rejected = error;
    },
  ).finally(() => {
    settled = true;
  });

  // Release scheduled work until the run ends; between rounds let real timers (deadlines, timeouts) fire.
  for (let spins = 0; !settled; spins++) {
    await scheduler.waitIdle();
    if (settled) break;
    if (spins > 2_000) throw new Error(`the run did not reach a final state; last events: ${events.slice(-5).map((e) => e.type).join(", ")}`);
    await sleep(1);
  }
  await run;
  // Whatever the scheduler still holds (commands for a finished run, gates of aborted calls) drains now.
  await scheduler.waitIdle();
  observation.cancelled = cancelled;
  observation.signalListeners = countAbortListeners(longLived);
  return observation;
}

function countAbortListeners(signal: AbortSignal): number {
  return getEventListeners(signal, "abort").length;
}
