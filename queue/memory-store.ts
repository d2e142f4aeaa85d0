import { EventEmitter } from "node:events";
import type { CheckpointSummary } from "../machines/persistence/checkpoints/store.js";
import type { AgentOutput } from "../machines/contract/context.js";
import { MemoryRunLog, type MemoryRunRow, type WriteFence } from "../machines/persistence/log/memory-log.js";
import { isFinal } from "../machines/persistence/log/records.js";
import { FencedError, RunQueueError } from "./errors.js";
import type { PersistedAgent } from "../machines/persistence/persistence.js";
import { Fences } from "./fences.js";
import type { QueueSignal, RunStore } from "./run-store.js";
import { checkAgentKnown, checkCommand, checkListOptions, checkRunId, checkSubmit, sendProblem } from "./requests.js";
import { dedupeKeyOf, type ClaimedRun, type InboxEvent, type ListOptions, type RunCommand, type RunInput, type RunStatusInfo, type RunSummary, type SubmitRequest, type UnknownAgents } from "./schemas.js";
import { Waiters } from "./wait.js";
import { MemoryRunEvents, type RunEventInput, type StoredRunEvent } from "./run-events.js";

/**
 * The run queue in one process's memory: the reference the conformance suite holds the durable
 * stores to, and a store for tests. Runs are kept by the run log's memory backend (checkpoints,
 * streams, journal, forks, threads); this adds the queue's inboxes, leases and fences. Nothing
 * survives the process.
 */
export class MemoryRunStore extends MemoryRunLog implements RunStore {
  private readonly inboxes = new Map<string, { id: number; key: string; command: string; applied: boolean }[]>();
  private readonly events = new MemoryRunEvents();
  private readonly fences = new Fences();
  private readonly agents = new Set<string>();
  private readonly signals = new EventEmitter();
  private nextEvent = 1;
  private closed = false;

  constructor(private readonly options: { pollMs?: number; now?: () => number; keepCheckpoints?: number; keepFinishedMs?: number; unknownAgents?: UnknownAgents } = {}) {
    super({
      ...(options.now ? { now: options.now } : {}),
      ...(options.keepCheckpoints !== undefined ? { keepCheckpoints: options.keepCheckpoints } : {}),
      ...(options.keepFinishedMs !== undefined ? { keepFinishedMs: options.keepFinishedMs } : {}),
    });
    this.signals.setMaxListeners(0);
  }

  private open(): void {
    if (this.closed) throw new RunQueueError("closed", "this MemoryRunStore is closed; create a new one");
  }

  private signal(signal: QueueSignal): void {
    queueMicrotask(() => this.signals.emit("signal", signal));
  }

  protected override fenceFor(runId: string, reading: boolean): WriteFence | undefined {
    return reading ? this.fences.get(runId) : this.fences.forWrite(runId);
  }

  protected override lost(runId: string, token: number): Error {
    return this.fences.lost(runId, token);
  }

  protected override fencedSaveStored(run: MemoryRunRow, fence: WriteFence): void {
    this.applyThrough(run.runId, fence.delivered);
  }

  async submit(request: SubmitRequest): Promise<string> {
    this.open();
    const { agent, input, runId } = checkSubmit(request);
    await checkAgentKnown(agent, this.options.unknownAgents ?? "queue", () => [...this.agents].sort());
    const existing = this.runs.get(runId);
    if (existing) {
      if (existing.agent !== agent) throw new RunQueueError("invalid_input", `submit: run ${runId} already exists for agent "${existing.agent}", not "${agent}"; submit under another runId`);
      return runId;
    }
    const fields = { agent, input, status: "queued" as const, wakeAt: this.now() };
    if (typeof input.threadId === "string") this.openThread(input.threadId, runId, fields);
    else this.newRun({ runId, ...fields });
    this.signal({ kind: "runnable", runId });
    return runId;
  }

  async send(runId: string, command: RunCommand): Promise<boolean> {
    this.open();
    const id = checkRunId(runId, "send");
    const checked = checkCommand(command);
    const run = this.runs.get(id);
    const problem = sendProblem(id, checked, run);
    if (problem) throw problem;
    const inbox = this.inboxes.get(id) ?? [];
    const key = dedupeKeyOf(checked);
    if (inbox.some((e) => e.key === key)) return false;
    inbox.push({ id: this.nextEvent++, key, command: JSON.stringify(checked), applied: false });
    this.inboxes.set(id, inbox);
    this.signal({ kind: "runnable", runId: id });
    return true;
  }

  /** Signals in one process are never lost: waiters read only when told a run finished (queue/wait.ts). */
  private readonly waiters = new Waiters({
    outputs: async (runIds) => {
      const found = new Map<string, unknown>();
      for (const runId of runIds) {
        const run = this.runs.get(runId);
        if (run) found.set(runId, run.output ?? null);
      }
      return found;
    },
    unknownRun: (runId) => new RunQueueError("unknown_run", `wait: there is no run ${JSON.stringify(runId)}; check the id with store.list({})`),
    subscribe: (listener) => this.subscribe(listener),
    listeningSince: () => 0,
    pollMs: () => this.options.pollMs ?? 1_000,
  });

  async wait(runId: string, options: { signal?: AbortSignal } = {}): Promise<AgentOutput> {
    return this.waiters.wait(checkRunId(runId, "wait"), options.signal);
  }

  private info(run: MemoryRunRow): RunStatusInfo {
    const leased = run.owner !== undefined && run.leaseUntil !== undefined && run.leaseUntil > this.now();
    return { runId: run.runId, agent: run.agent, status: run.status, pendingApprovals: structuredClone(run.pending), ...(leased ? { owner: run.owner! } : {}), updatedAt: run.updatedAt };
  }

  async status(runId: string): Promise<RunStatusInfo> {
    const id = checkRunId(runId, "status");
    const run = this.runs.get(id);
    if (!run) throw new RunQueueError("unknown_run", `status: there is no run ${JSON.stringify(id)}; check the id with store.list({})`);
    return this.info(run);
  }

  override list(): CheckpointSummary[];
  override list(options: ListOptions): Promise<RunSummary[]>;
  override list(options?: ListOptions): CheckpointSummary[] | Promise<RunSummary[]> {
    if (options === undefined) return super.list();
    const { status, agent, limit } = checkListOptions(options);
    const rows = [...this.runs.values()]
      .filter((r) => (status === undefined || r.status === status) && (agent === undefined || r.agent === agent))
      .sort((a, b) => b.createdAt - a.createdAt || b.seq - a.seq)
      .slice(0, limit)
      .map((r) => ({ ...this.info(r), ...(r.summary ? { state: r.summary.state } : {}), iteration: r.summary?.iteration ?? 0, createdAt: r.createdAt }));
    return Promise.resolve(rows);
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  override delete(runId: string): boolean {
    this.inboxes.delete(runId);
    this.events.prune([runId]);
    return super.delete(runId);
  }

  // ---- the worker's half ----

  async registerAgents(agents: readonly string[]): Promise<void> {
    this.open();
    for (const agent of agents) this.agents.add(agent);
  }

  async claim(request: { owner: string; agents: readonly string[]; limit: number; leaseMs: number }): Promise<ClaimedRun[]> {
    this.open();
    const now = this.now();
    const claimable = [...this.runs.values()]
      .filter(
        (r) =>
          request.agents.includes(r.agent) &&
          (r.status === "queued" || r.status === "running" || r.status === "awaitingApproval") &&
          (r.owner === undefined || (r.leaseUntil ?? 0) < now) &&
          ((r.wakeAt !== undefined && r.wakeAt <= now) || (this.inboxes.get(r.runId) ?? []).some((e) => !e.applied)),
      )
      .sort((a, b) => (a.wakeAt ?? Infinity) - (b.wakeAt ?? Infinity) || a.seq - b.seq)
      .slice(0, request.limit);
    return claimable.map((r) => {
      r.owner = request.owner;
      r.token += 1;
      r.leaseUntil = now + request.leaseMs;
      r.wakeAt = now;
      r.status = "running";
      r.updatedAt = now;
      const checkpoint = this.load(r.runId);
      const inboxEmpty = !(this.inboxes.get(r.runId) ?? []).some((e) => !e.applied);
      return { runId: r.runId, agent: r.agent, token: r.token, input: structuredClone(r.input) as RunInput, ...(checkpoint ? { checkpoint } : {}), inboxEmpty };
    });
  }

  fence(runId: string, token: number, onLost: (error: Error) => void): void {
    this.fences.fence(runId, token, onLost);
  }

  unfence(runId: string): void {
    this.fences.unfence(runId);
  }

  delivered(runId: string, throughId: number): void {
    this.fences.delivered(runId, throughId);
  }

  async renew(runId: string, token: number, leaseMs: number): Promise<boolean> {
    const run = this.runs.get(runId);
    if (!run || run.token !== token || run.owner === undefined) return false;
    run.leaseUntil = this.now() + leaseMs;
    return true;
  }

  async inbox(runId: string, afterId: number): Promise<InboxEvent[]> {
    return (this.inboxes.get(runId) ?? []).filter((e) => e.id > afterId && !e.applied).map((e) => ({ id: e.id, command: JSON.parse(e.command) as RunCommand }));
  }

  private applyThrough(runId: string, throughId: number): void {
    for (const event of this.inboxes.get(runId) ?? []) if (event.id <= throughId) event.applied = true;
  }

  private handBack(runId: string, token: number, change: (run: MemoryRunRow) => void, applyAll = false): boolean {
    const run = this.runs.get(runId);
    if (!run || run.token !== token) return false;
    this.applyThrough(runId, applyAll ? Number.MAX_SAFE_INTEGER : this.fences.deliveredOf(runId));
    run.owner = undefined;
    run.leaseUntil = undefined;
    run.updatedAt = this.now();
    change(run);
    return true;
  }

  async park(runId: string, token: number, wakeAt: number | undefined): Promise<boolean> {
    return this.handBack(runId, token, (run) => {
      run.status = "awaitingApproval";
      run.wakeAt = wakeAt;
    });
  }

  async finish(runId: string, token: number, output: AgentOutput, lastCheckpoint?: PersistedAgent): Promise<boolean> {
    if (lastCheckpoint) {
      if (this.fences.heldOtherwise(runId, token)) return false;
      // Nothing between the two in one process: the save's fence check is the finish's.
      try {
        this.save(runId, lastCheckpoint);
      } catch (error) {
        if (error instanceof FencedError) return false;
        throw error;
      }
    }
    const done = this.handBack(
      runId,
      token,
      (run) => {
        run.status = output.status;
        run.output = JSON.stringify(output);
        run.wakeAt = undefined;
        run.pending = [];
      },
      true,
    );
    if (done) this.signal({ kind: "finished", runId });
    return done;
  }

  async release(runId: string, token: number): Promise<boolean> {
    const done = this.handBack(runId, token, (run) => {
      run.wakeAt = this.now();
    });
    if (done) this.signal({ kind: "runnable", runId });
    return done;
  }

  subscribe(listener: (signal: QueueSignal) => void): () => void {
    this.signals.on("signal", listener);
    return () => this.signals.off("signal", listener);
  }

  async appendRunEvents(runId: string, token: number, events: readonly RunEventInput[]): Promise<boolean> {
    this.open();
    if (this.runs.get(runId)?.token !== token) return false;
    this.events.append(runId, events);
    this.signal({ kind: "events", runId });
    return true;
  }

  async lastRunEventSeq(runId: string): Promise<number> {
    this.open();
    return this.events.last(runId);
  }

  async runEventsAfter(runId: string, afterSeq: number, limit: number): Promise<StoredRunEvent[]> {
    this.open();
    return this.events.after(runId, afterSeq, limit);
  }

  async pruneRunEvents(finishedBefore: number): Promise<number> {
    const finished = [...this.runs.values()].filter((run) => isFinal(run.status) && run.updatedAt < finishedBefore);
    return this.events.prune(finished.map((run) => run.runId));
  }
}
