import { createActor, type Actor, type Snapshot } from "xstate";
import type { AgentInput } from "../../machines/contract/context.js";
import { checkpointAgent, type CheckpointHandle } from "../../machines/persistence/checkpoints/checkpoint-agent.js";
import type { CheckpointStore } from "../../machines/persistence/checkpoints/store.js";
import type { ReactMachine } from "../../machines/react-machine.js";
import type { RunSnapshot } from "../protocol.js";
import { RunLog } from "./run-log.js";
import { translateRunEvents } from "./run-events.js";
import { runSnapshotOf, type SnapshotLike } from "./run-view.js";

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

  constructor(options: LiveRunOptions) {
    this.agent = options.agent;
    this.machine = options.machine;
    this.actor = createActor(options.machine, "input" in options.start ? { input: options.start.input } : { snapshot: options.start.snapshot });
    const first = this.snapshot();
    // Input the machine refuses (AgentInputError, StateError) leaves the actor in error before it starts.
    if (first.status === "error") throw (this.actor.getSnapshot() as { error?: unknown }).error;
    this.runId = first.context.loop.runId;
    this.checkpoints = options.store ? checkpointAgent(this.actor, options.store, options.onError ? { onError: options.onError } : {}) : undefined;
    translateRunEvents(this.actor, {
      agent: this.agent,
      machine: this.machine,
      restored: "snapshot" in options.start,
      append: (event) => this.log.append(event),
      onEnd: () => {
        this.log.close();
        if (this.actor.getSnapshot().status === "done") this.checkpoints?.flush().catch((error: unknown) => options.onError?.(error as Error));
      },
    });
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
}
