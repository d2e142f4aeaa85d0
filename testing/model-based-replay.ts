import { createActor, fromPromise, type EventObject } from "xstate";
import type { ApprovalTimerInput, ApprovalTimerOutput } from "../actors/approval-timer.js";
import type { ContextBuilder } from "../actors/context-builder.js";
import type { PreflightInput, PreflightOutput } from "../actors/guard.js";
import { createLLMActor, type LLMOutput } from "../actors/llm-step.js";
import { ModelError, type ModelClient, type ModelRequest } from "../actors/model-client.js";
import { createCompactionActor } from "../actors/compaction.js";
import { fromReportingPromise, type ReportingPromiseArgs } from "../actors/reporting-promise.js";
import type { AgentOutput } from "../machines/contract/context.js";
import type { AgentEmitted } from "../machines/contract/events.js";
import { toolProvidersClosed } from "../machines/react-machine.js";
import { PLAYED_BY_PATH, SCRIPTED_SUMMARY, type ActorSrc } from "./model-based-events.js";
import { InvariantChecker, InvariantViolation, type Violation } from "./model-based-invariants.js";
import type { ModelSetup, PathStep } from "./model-based-paths.js";
import { awaitedBy, type AgentSnapshot } from "./model-based-pure.js";
import { scriptedModel, type ScriptedResponse } from "./scripted-model.js";
import { JianmuError } from "../tools/jianmu-error.js";

/**
 * Live replay of a generated path. The machine is the user's, with its invoked actors wrapped
 * in gates: each one, once invoked, waits until the driver releases it, and the driver releases
 * it when the path's next event is that actor finishing. So the live run takes the path's
 * events in the path's order, without timing. Behind the gates run the real actors: the LLM
 * step over a `scriptedModel` holding the path's turns, the machine's own guard step (or, with
 * no policy, the path's verdicts), the machine's own tool executor; only the approval timer is
 * scripted (it fires when the path says the deadline passes). Commands are sent as real events.
 * After every driven step the live model state must equal the path's.
 */

export interface ReplayOptions {
  /** Every telemetry event of the live run, as it happens. */
  onEvent?: (event: AgentEmitted) => void;
  /** The replay rebuilds the LLM step over a scripted model; pass your context builder to keep your prompts. */
  contextBuilder?: ContextBuilder;
}

export interface ReplayResult {
  readonly output: AgentOutput;
  readonly emitted: readonly AgentEmitted[];
  /** The requests the scripted model received. */
  readonly requests: readonly ModelRequest[];
  /** Call ids the invariant checker saw allowed or approved when Executing started. */
  readonly authorized: ReadonlySet<string>;
}

/** The live run left the path. */
export class ReplayDivergence extends JianmuError {
  static override readonly errorCode = "REPLAY_DIVERGENCE";
  override name = "ReplayDivergence";
  constructor(
    readonly step: number,
    message: string,
  ) {
    super(message);
  }
}

export interface ReplayablePath {
  readonly description: string;
  readonly steps: readonly PathStep[];
  readonly violations: readonly Violation[];
}

type Release = { fail?: unknown; output?: unknown };

/** Where each gated actor waits for the driver. */
class Gates {
  private readonly waiting = new Map<ActorSrc, (release: Release) => void>();
  private readonly listeners = new Set<() => void>();

  wait(src: ActorSrc, signal: AbortSignal): Promise<Release> {
    return new Promise<Release>((resolve, reject) => {
      const release = (how: Release) => {
        this.waiting.delete(src);
        resolve(how);
      };
      this.waiting.set(src, release);
      signal.addEventListener(
        "abort",
        () => {
          if (this.waiting.get(src) === release) this.waiting.delete(src);
          reject(new Error(`${src} was stopped`));
          this.notify();
        },
        { once: true },
      );
      this.notify();
    });
  }

  get anyWaiting(): boolean {
    return this.waiting.size > 0;
  }

  waitingFor(): ActorSrc[] {
    return [...this.waiting.keys()];
  }

  release(src: ActorSrc, how: Release): boolean {
    const release = this.waiting.get(src);
    release?.(how);
    return release !== undefined;
  }

  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private notify(): void {
    for (const listener of [...this.listeners]) listener();
  }
}

/** What xstate hands a `fromPromise` creator, and a reporting step's creator its `report` (actors/reporting-promise.ts). */
type PromiseArgs<TInput> = ReportingPromiseArgs<TInput, EventObject>;
type PromiseCreator<TInput, TOutput> = (args: PromiseArgs<TInput>) => PromiseLike<TOutput>;

/** The function behind `fromPromise` logic (xstate keeps it as the logic's `config`). */
function promiseCreatorOf<TInput, TOutput>(logic: unknown, src: string): PromiseCreator<TInput, TOutput> {
  const creator = (logic as { config?: unknown } | undefined)?.config;
  if (typeof creator !== "function") {
    throw new TypeError(`replay: the machine's "${src}" actor is not fromPromise logic, so it cannot be run behind a replay gate`);
  }
  return creator as PromiseCreator<TInput, TOutput>;
}

function gated<TInput, TOutput>(gates: Gates, src: ActorSrc, run: PromiseCreator<TInput, TOutput>) {
  // A reporting step, so a gated LLM or executor still reports its progress while it runs.
  return fromReportingPromise<TOutput, TInput>(async (args) => {
    const how = await gates.wait(src, args.signal);
    if ("fail" in how) throw how.fail;
    return run(args);
  });
}

/** A model that answers every summary request as the paths expect (see SCRIPTED_SUMMARY). */
function summarizer(): ModelClient {
  return {
    description: "scripted summarizer",
    complete: async () => ({
      content: SCRIPTED_SUMMARY.text,
      toolCalls: [],
      usage: SCRIPTED_SUMMARY.usage,
      finishReason: "stop",
      model: "scripted",
    }),
  };
}

function scriptOf(steps: readonly PathStep[]): ScriptedResponse[] {
  return steps.flatMap((step): ScriptedResponse[] => {
    const { kind } = step;
    // The path's own error (a model failure, or a call refused over budget), thrown by the scripted model.
    if (kind.kind === "error" && kind.src === "llm") return [kind.error instanceof Error ? kind.error : new ModelError("the model call failed (scripted)", { kind: "script", model: "scripted" })];
    if (kind.kind !== "done" || kind.src !== "llm") return [];
    const turn = kind.output as LLMOutput;
    return [
      {
        content: turn.content,
        toolCalls: turn.toolCalls.map((call) => ({ id: call.id, name: call.name, arguments: call.arguments })),
        usage: { promptTokens: turn.usage.promptTokens, completionTokens: turn.usage.completionTokens },
        ...(turn.finishReason !== null ? { finishReason: turn.finishReason } : {}),
      },
    ];
  });
}

/**
 * The live run waits for the path: a guardrail step it plays is running (with something to check;
 * the deadline timer, always running, does not count: the run waits on it only when nothing else runs).
 */
function awaitsPath(snapshot: AgentSnapshot): boolean {
  return awaitedBy(snapshot).some((child) => PLAYED_BY_PATH.has(child.src as ActorSrc) && child.src !== "deadlineTimer" && (child.input as { skip?: boolean } | undefined)?.skip !== true);
}

export async function replayPath(setup: ModelSetup, path: ReplayablePath, options: ReplayOptions & { policy: boolean }): Promise<ReplayResult> {
  if (path.violations.length > 0) throw new InvariantViolation(path.violations, `${path.description} (pure run)`);
  const { machine } = setup;
  const gates = new Gates();
  const model = scriptedModel(scriptOf(path.steps));
  const verdicts = path.steps.flatMap((step) => (step.kind.kind === "done" && step.kind.src === "guard" ? [step.kind.output as PreflightOutput] : []));
  const { actors } = machine.implementations;
  const realGuard = promiseCreatorOf<PreflightInput, PreflightOutput>(actors["guard"], "guard");
  const scriptedGuard = async () => verdicts.shift() ?? { decisions: [] };
  const live = machine.provide({
    actors: {
      llm: gated(gates, "llm", promiseCreatorOf(createLLMActor({ modelClient: model, ...(options.contextBuilder ? { contextBuilder: options.contextBuilder } : {}) }), "llm")),
      guard: gated(gates, "guard", options.policy ? realGuard : scriptedGuard),
      toolExecutor: gated(gates, "toolExecutor", promiseCreatorOf(actors["toolExecutor"], "toolExecutor")),
      approvalTimer: gated<ApprovalTimerInput, ApprovalTimerOutput>(gates, "approvalTimer", async ({ input }) => ({ firedAt: input.deadline ?? Date.now() })),
      // The real compaction step; its summarizer is a model that always writes the path's summary.
      compaction: gated(gates, "compaction", promiseCreatorOf(createCompactionActor({ modelClient: summarizer() }), "compaction")),
      // Guardrails and the deadline timer are played by the path: it sends their outcome itself, so they never settle here.
      ...Object.fromEntries([...PLAYED_BY_PATH].map((src) => [src, fromPromise<unknown>(() => new Promise(() => {}))])),
      // Nested agents (agentTool, handoff) are played by the path: they answer what it says when it says.
      ...Object.fromEntries(
        Object.keys(actors)
          .filter((src) => src.startsWith("agent."))
          .map((src) => [
            src,
            fromPromise<unknown>(async ({ signal }) => {
              const how = await gates.wait("agent", signal);
              if ("fail" in how) throw how.fail;
              return how.output;
            }),
          ]),
      ),
    } as never,
  });

  const checker = new InvariantChecker(setup.access, setup.config, setup.unguarded, setup.guardrails);
  const emitted: AgentEmitted[] = [];
  const actor = createActor(live, {
    input: setup.input,
    inspect: (event) => {
      // A step the run asks its step host for (actors/step-host.ts), checked as a started child is.
      if (event.type === "@xstate.event" && event.event.type === "step.request" && event.sourceRef?.sessionId === event.rootId) {
        const { step, input } = event.event as unknown as { step: string; input: unknown };
        checker.requested({ step, input, event: event.event }, event.sourceRef.getSnapshot() as AgentSnapshot);
      }
      if (event.type !== "@xstate.microstep" || event.actorRef.sessionId !== event.rootId) return;
      checker.observe({ event: event.event, snapshot: event.snapshot as AgentSnapshot, transitions: event._transitions });
    },
  });
  actor.on("*", (event) => {
    const agentEvent = event as AgentEmitted;
    emitted.push(agentEvent);
    if (agentEvent.type === "tool.call.started" && agentEvent.agentPath === undefined) checker.toolStarted(agentEvent.callId, agentEvent.name, agentEvent.iteration);
    options.onEvent?.(agentEvent);
  });

  /** Resolves once the live run rests: finished, or an invoked actor waits at its gate. */
  const settled = () =>
    new Promise<void>((resolve, reject) => {
      // A played guardrail step waits for the path, but only once what was released has moved the run on.
      const before = liveKey();
      const rests = () => actor.getSnapshot().status !== "active" || gates.anyWaiting || (awaitsPath(actor.getSnapshot() as AgentSnapshot) && liveKey() !== before);
      if (rests()) return resolve();
      const finish = (error?: unknown) => {
        off();
        subscription.unsubscribe();
        if (error === undefined) resolve();
        else reject(error);
      };
      const off = gates.onChange(() => rests() && finish());
      const subscription = actor.subscribe({
        next: () => rests() && finish(),
        complete: () => finish(),
        error: (error) => finish(error ?? new Error("the live actor failed")),
      });
    });

  const where = (index: number, step: PathStep | undefined) => `${path.description}\n  step ${index}${step ? ` (${step.label})` : ""}`;
  const stop = (error: Error): never => {
    if (checker.violations.length > 0) throw new InvariantViolation(checker.violations, `${path.description} (live replay)`);
    throw error;
  };
  const liveKey = () => {
    const snapshot = actor.getSnapshot();
    return snapshot.status === "error" ? `(the live actor crashed: ${String(snapshot.error)})` : setup.key(snapshot);
  };

  try {
    actor.start();
    for (const [index, step] of path.steps.entries()) {
      checker.step = index + 1;
      const { kind } = step;
      switch (kind.kind) {
        case "progress":
          // Progress comes from the running actors themselves; it changes no model state.
          continue;
        case "toolsReady":
          await settled();
          break;
        case "toolsFailed":
        case "stepsReady":
        case "nested":
        case "cancel":
        case "approve":
        case "reject":
          // Processed synchronously: the live run is in the next state (and its actor at its gate) right away.
          actor.send(step.event as Parameters<typeof actor.send>[0]);
          break;
        case "done":
        case "error": {
          if (PLAYED_BY_PATH.has(kind.src)) {
            // Processed synchronously, like a decision: what it starts is at its gate right away (the
            // next state may wait on another played actor, which no gate shows, so there is nothing to await).
            actor.send(step.event as Parameters<typeof actor.send>[0]);
            break;
          }
          if (kind.kind === "done" && kind.src === "guard") checker.expectDecisions((kind.output as PreflightOutput).decisions);
          // A model error comes from the scripted model itself; the other actors are made to throw.
          const how: Release = kind.kind === "error" && kind.src !== "llm" ? { fail: kind.error } : kind.kind === "done" && kind.src === "agent" ? { output: kind.output } : {};
          if (!gates.release(kind.src, how)) {
            stop(new ReplayDivergence(index + 1, `${where(index + 1, step)}: expected ${kind.src} to be running, but the live run waits for [${gates.waitingFor().join(", ")}] in ${liveKey()}`));
          }
          await settled();
          break;
        }
      }
      const actual = liveKey();
      if (actual !== step.key) {
        stop(new ReplayDivergence(index + 1, `${where(index + 1, step)}: the live run is in\n    ${actual}\n  where the path is in\n    ${step.key}`));
      }
    }
    const snapshot = actor.getSnapshot();
    if (snapshot.status !== "done") stop(new ReplayDivergence(path.steps.length, `${where(path.steps.length, undefined)}: the path ended but the live run did not (${liveKey()})`));
    const output = snapshot.output as AgentOutput;
    checker.checkModelRequests(model.requests);
    checker.checkOutput(output);
    if (checker.violations.length > 0) throw new InvariantViolation(checker.violations, `${path.description} (live replay)`);
    await toolProvidersClosed(machine, output.runId);
    return { output, emitted, requests: model.requests, authorized: checker.everAuthorized };
  } finally {
    if (actor.getSnapshot().status === "active") actor.stop();
  }
}
