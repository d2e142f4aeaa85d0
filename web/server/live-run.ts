import { createActor, type Actor, type Snapshot } from "xstate";
import type { AgentInput, AgentOutput } from "../../machines/contract/context.js";
import type { AgentEmitted } from "../../machines/contract/events.js";
import { checkpointAgent, type CheckpointHandle } from "../../machines/persistence/checkpoints/checkpoint-agent.js";
import type { CheckpointStore } from "../../machines/persistence/checkpoints/store.js";
import type { ReactMachine } from "../../machines/react-machine.js";
import type { RunEvent, RunSnapshot } from "../protocol.js";
import { RunLog } from "./run-log.js";
import { fieldsOf, outputView, positionOf, runSnapshotOf, type SnapshotLike } from "./run-view.js";

export interface LiveRunOptions {
  agent: string;
  machine: ReactMachine;
  store?: CheckpointStore;
  /** A fresh run's input, or the restored snapshot of a saved one. */
  start: { input: AgentInput } | { snapshot: Snapshot<unknown> };
  onError?: (error: Error) => void;
}

/**
 * One run held by this process: the agent's actor, checkpointed to the store at every stable
 * state, and its telemetry and snapshots turned into the protocol's events in a RunLog.
 */
export class LiveRun {
  readonly log = new RunLog();
  readonly agent: string;
  readonly runId: string;
  readonly actor: Actor<ReactMachine>;
  private readonly machine: ReactMachine;
  private readonly checkpoints: CheckpointHandle | undefined;
  private lastPath: string;
  private sentMessages: number;
  private lastUsage: number;
  /** Telemetry of the macrostep under way, told with the snapshot it led to (see onSnapshot). */
  private readonly step: RunEvent[] = [];

  constructor(options: LiveRunOptions) {
    this.agent = options.agent;
    this.machine = options.machine;
    this.actor = createActor(options.machine, "input" in options.start ? { input: options.start.input } : { snapshot: options.start.snapshot });
    const first = this.snapshot();
    // Input the machine refuses (AgentInputError, StateError) leaves the actor in error before it starts.
    if (first.status === "error") throw (this.actor.getSnapshot() as { error?: unknown }).error;
    this.runId = first.context.loop.runId;
    // A restored run's past was told by the process that saved it: only what happens from here is new.
    const restored = "snapshot" in options.start;
    this.lastPath = restored ? positionOf(first).path : "";
    this.sentMessages = restored ? fieldsOf(this.machine, first).messages.length : 0;
    this.lastUsage = restored ? fieldsOf(this.machine, first).usage.totalTokens : 0;
    this.checkpoints = options.store ? checkpointAgent(this.actor, options.store, options.onError ? { onError: options.onError } : {}) : undefined;
    this.actor.on("*", (event) => this.onEmitted(event as AgentEmitted));
    this.actor.subscribe({
      next: (snapshot) => this.onSnapshot(snapshot as unknown as SnapshotLike),
      error: (error) => {
        this.log.append({ type: "run.error", data: { message: error instanceof Error ? error.message : String(error) } });
        this.log.close();
      },
      complete: () => {
        this.tell(this.step.length);
        // A stopped actor completes too: the run is parked (in the store), not finished.
        if (this.actor.getSnapshot().status !== "done") return this.log.close();
        const output = this.actor.getSnapshot().output as AgentOutput;
        this.log.append({ type: "run.finished", data: { output: outputView(output) } });
        this.log.close();
        this.checkpoints?.flush().catch((error: unknown) => options.onError?.(error as Error));
      },
    });
    if (!restored) this.log.append({ type: "run.started", data: { runId: this.runId, agent: this.agent } });
  }

  start(): this {
    this.actor.start();
    return this;
  }

  /** Resolves when every checkpoint so far is stored. */
  async flush(): Promise<void> {
    await this.checkpoints?.flush();
  }

  /** Stop the actor without ending the run: its last checkpoint stays parked in the store. */
  stop(): void {
    this.checkpoints?.stop();
    this.actor.stop();
    this.log.close();
  }

  get active(): boolean {
    return this.actor.getSnapshot().status === "active";
  }

  snapshot(): SnapshotLike {
    return this.actor.getSnapshot() as unknown as SnapshotLike;
  }

  view(): RunSnapshot {
    return runSnapshotOf(this.agent, this.machine, this.snapshot());
  }

  /**
   * One macrostep, told in causal order. XState hands over a macrostep's emitted events before its
   * snapshot, though the step may have finished things (a call's result is a new message, a decision
   * leads to a new state) and then begun the next (a reply, a call, a question asked in the new
   * state). So the step's events are told in their order, and the messages, usage and state change
   * the step made go in after the last event that ended something, before what began after it.
   */
  private onSnapshot(snapshot: SnapshotLike): void {
    const lastEnding = this.step.findLastIndex((event) => !BEGINNINGS.has(event.type));
    this.tell(lastEnding + 1);
    const fields = fieldsOf(this.machine, snapshot);
    for (; this.sentMessages < fields.messages.length; this.sentMessages++) {
      this.log.append({ type: "message", data: { index: this.sentMessages, message: fields.messages[this.sentMessages]! } });
    }
    if (fields.usage.totalTokens !== this.lastUsage) {
      this.lastUsage = fields.usage.totalTokens;
      this.log.append({ type: "usage", data: { usage: fields.usage } });
    }
    const position = positionOf(snapshot);
    if (position.path !== this.lastPath) {
      this.lastPath = position.path;
      this.log.append({ type: "state.changed", data: { ...position, status: runSnapshotOf(this.agent, this.machine, snapshot).status } });
    }
    this.tell(this.step.length);
  }

  private onEmitted(event: AgentEmitted): void {
    const translated = translate(event);
    if (translated) this.step.push(translated);
  }

  /** Append the step's first `count` events to the log. */
  private tell(count: number): void {
    for (const event of this.step.splice(0, count)) this.log.append(event);
  }
}

/** Telemetry that begins something in the state a macrostep ends in (the rest reports what ended on the way there). */
const BEGINNINGS: ReadonlySet<RunEvent["type"]> = new Set(["reply.started", "tool.call.started", "approval.requested"]);

/** The agent's telemetry a page shows; the rest (model attempts, timings) stays on the server. */
function translate(event: AgentEmitted): RunEvent | undefined {
  switch (event.type) {
    case "reply.started":
      return { type: "reply.started", data: { round: event.round } };
    case "text.delta":
      return { type: "text.delta", data: { delta: event.delta } };
    case "reasoning.delta":
      return { type: "reasoning.delta", data: { delta: event.delta } };
    case "tool.call.started":
      return { type: "tool.call.started", data: { callId: event.callId, name: event.name, arguments: event.arguments } };
    case "tool.call.completed":
      return { type: "tool.call.completed", data: { callId: event.callId, name: event.name, output: event.output, durationMs: event.durationMs } };
    case "tool.call.failed":
      return { type: "tool.call.failed", data: { callId: event.callId, name: event.name, error: event.error, errorKind: event.errorKind } };
    case "tool.call.denied":
      return { type: "tool.call.denied", data: { callId: event.callId, name: event.name, reason: event.reason } };
    case "guard.approval.requested":
      return {
        type: "approval.requested",
        data: {
          callId: event.callId,
          name: event.name,
          arguments: event.arguments,
          ...(event.reason !== undefined ? { reason: event.reason } : {}),
          ...(event.deadline !== undefined ? { deadline: event.deadline } : {}),
        },
      };
    case "guard.approval.decided":
      return {
        type: "approval.decided",
        data: { callId: event.callId, name: event.name, decision: event.decision, edited: event.edited, ...(event.reason !== undefined ? { reason: event.reason } : {}) },
      };
    default:
      return undefined;
  }
}
