import type { AgentEmitted } from "../machines/contract/events.js";

/** What a worker reports through `onEvent`: its own lifecycle and, per run, the agent's telemetry. */
export type WorkerEvent =
  | { type: "worker.started"; worker: string; agents: string[] }
  | { type: "worker.error"; worker: string; message: string; retryInMs: number }
  | { type: "worker.stopped"; worker: string }
  | { type: "run.claimed"; worker: string; runId: string; agent: string; token: number; resumed: boolean }
  | { type: "run.parked"; worker: string; runId: string; wakeAt?: number }
  | { type: "run.finished"; worker: string; runId: string; status: "succeeded" | "failed" }
  /** Another worker holds the run now (this one's lease ran out): this worker stopped it and wrote nothing more. */
  | { type: "run.fenced"; worker: string; runId: string; token: number }
  /** The database failed under the run: stopped here, resumed from its last checkpoint once the lease expires. */
  | { type: "run.abandoned"; worker: string; runId: string; reason: string }
  | { type: "run.released"; worker: string; runId: string }
  | { type: "agent.event"; worker: string; runId: string; event: AgentEmitted };
