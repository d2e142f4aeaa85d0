import { startWorker, type Worker } from "../../queue/worker.js";
import type { RunStore } from "../../queue/run-store.js";
import { RunQueueError, errorText } from "../../queue/errors.js";
import type { RunInput } from "../../queue/schemas.js";
import type { ReactMachine } from "../../machines/react-machine.js";
import type { CommandAccepted, IdentifiedRunEvent, RunCommand, RunSnapshot } from "../protocol.js";
import { ThreadBusyError } from "../../machines/persistence/log/thread-busy.js";
import { HttpError } from "./errors.js";
import { runSnapshotOf, type SnapshotLike } from "./run-view.js";
import { StoreFollowers } from "./store-follow.js";
import { storeRunEvents } from "./store-events.js";
import { checkQueuedEdit } from "./queue-edits.js";

export interface QueueRunsOptions {
  store: RunStore;
  agents: Readonly<Record<string, ReactMachine>>;
  /** Run an embedded worker in this process (false: separate `startWorker` processes run the agents). */
  worker: boolean;
  /** How often followed runs are read when no notification came. */
  pollMs: number;
  /** Events of a finished run are deleted this long after it ended. */
  retainEventsMs: number;
  onError: (error: Error) => void;
}

/** A run with no checkpoint yet (queued, or ended before its first): what a page is told of it. */
const EMPTY_USAGE = { promptTokens: 0, completionTokens: 0, totalTokens: 0 };

/**
 * The handler's runs on a run queue: a start is a submit, a worker (embedded here, or in another
 * process) runs it and writes its events to the store, approvals and cancels go to the run's inbox,
 * and every view and stream is read from the store. Nothing is held only in this process, so any
 * replica serves any run, and a replica that dies loses nothing.
 */
export class QueueRuns {
  readonly followers: StoreFollowers;
  private readonly worker: Promise<Worker | undefined>;
  private readonly pruner: NodeJS.Timeout;

  constructor(private readonly options: QueueRunsOptions) {
    const { store, agents, onError } = options;
    this.followers = new StoreFollowers({ store, pollMs: options.pollMs, settled: async (runId) => ({ type: "run.snapshot", data: await this.view(runId), id: "settled" }), onError });
    this.worker = options.worker
      ? startWorker({ store, agents: { ...agents }, observe: storeRunEvents(store) }).catch((error: unknown) => {
          onError(new Error(`jianmu/http: the embedded worker did not start: ${errorText(error)}`));
          return undefined;
        })
      : Promise.resolve(undefined);
    this.pruner = setInterval(() => {
      store.pruneRunEvents(Date.now() - options.retainEventsMs).catch((error: unknown) => onError(error instanceof Error ? error : new Error(String(error))));
    }, Math.max(1_000, Math.min(options.retainEventsMs, 60_000)));
    this.pruner.unref();
  }

  async start(agent: string, input: RunInput): Promise<string> {
    return this.options.store.submit({ agent, input }).catch((error: unknown) => {
      throw httpErrorOf(error);
    });
  }

  /** The run's agent (for authorization) and whether it still takes commands; 404 for a run the store does not have. */
  async agentOf(runId: string): Promise<string> {
    const info = await this.options.store.status(runId).catch((error: unknown) => {
      throw httpErrorOf(error);
    });
    if (!Object.hasOwn(this.options.agents, info.agent)) throw unknownRun(runId);
    return info.agent;
  }

  /** `GET /runs/:id`: read from the run's last checkpoint. */
  async view(runId: string): Promise<RunSnapshot> {
    const { store, agents } = this.options;
    const [info, record] = await Promise.all([store.status(runId), store.load(runId)]).catch((error: unknown) => {
      throw httpErrorOf(error);
    });
    const machine = agents[info.agent];
    if (!machine) throw unknownRun(runId);
    if (record) return runSnapshotOf(info.agent, machine, record.snapshot as unknown as SnapshotLike);
    const status = info.status === "queued" ? "running" : info.status;
    return { runId, agent: info.agent, status, state: { value: info.status, path: info.status }, messages: [], streamingText: "", pendingApprovals: info.pendingApprovals, usage: EMPTY_USAGE, output: null };
  }

  /** Follow the run's stored events after `lastEventId` (all of them without one). */
  follower(runId: string, lastEventId: string | null): { follow: (send: (event: IdentifiedRunEvent) => void, end: () => void) => () => void } {
    const after = lastEventId !== null && /^\d{1,15}$/.test(lastEventId) ? Number(lastEventId) : 0;
    return { follow: (send, end) => this.followers.follow(runId, after, send, end) };
  }

  /** The sequence number of the run's last stored event (0 before its first): a follower after it gets only what comes next. */
  lastEventSeq(runId: string): Promise<number> {
    return this.options.store.lastRunEventSeq(runId).catch((error: unknown) => {
      throw httpErrorOf(error);
    });
  }

  /** The calls the run's inbox holds a decision for that its worker has not applied yet (its checkpoint still shows them waiting). */
  async decidedInInbox(runId: string): Promise<Set<string>> {
    const queued = await this.options.store.inbox(runId, 0).catch((error: unknown) => {
      throw httpErrorOf(error);
    });
    return new Set(queued.flatMap(({ command }) => (command.type === "agent.cancel" ? [] : [command.callId])));
  }

  /** An approval, a rejection or a cancel: into the run's inbox, for whichever worker holds it. */
  async command(runId: string, command: RunCommand): Promise<CommandAccepted> {
    await this.send(runId, [command]);
    const view = await this.view(runId);
    return { runId, status: view.status, state: view.state };
  }

  /** Commands into the run's inbox, in order; every edited argument set is checked first, so one the tool refuses (422) sends none. */
  async send(runId: string, commands: readonly RunCommand[]): Promise<void> {
    try {
      if (commands.some((command) => command.type === "guard.approve" && command.args !== undefined)) {
        const info = await this.options.store.status(runId);
        const machine = this.options.agents[info.agent];
        if (machine) for (const command of commands) checkQueuedEdit(machine, info, command);
      }
      for (const command of commands) await this.options.store.send(runId, command);
    } catch (error) {
      throw httpErrorOf(error);
    }
  }

  async close(): Promise<void> {
    clearInterval(this.pruner);
    this.followers.close();
    await (await this.worker)?.stop({ timeoutMs: 1_000 });
  }
}

function unknownRun(runId: string): HttpError {
  return new HttpError(404, "unknown_run", `there is no run ${JSON.stringify(runId)}`);
}

/** The queue's refusals as the handler's answers; a store failure is a 500 that names no database. */
function httpErrorOf(error: unknown): Error {
  if (error instanceof ThreadBusyError) return new HttpError(409, "thread_busy", error.message, "threadId");
  if (!(error instanceof RunQueueError)) return error instanceof Error ? error : new Error(String(error));
  switch (error.problem) {
    case "unknown_run":
      return new HttpError(404, "unknown_run", "there is no such run");
    case "finished_run":
      return new HttpError(409, "run_finished", error.message.replace(/^send: /, ""));
    case "not_pending":
      return new HttpError(409, "not_pending", error.message.replace(/^send: /, ""), "callId");
    case "invalid_input":
      return new HttpError(400, "invalid_body", error.message.replace(/^\w+: /, ""));
    default:
      // The message may name the database (host, user): the handler logs it and answers 500 without it.
      return error;
  }
}
