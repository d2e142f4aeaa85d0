import type { Message } from "../../../actors/messages.js";
import { AgentInputError, ThreadIdSchema, type AgentInput } from "../../contract/context.js";
import type { CheckpointStore } from "../checkpoints/store.js";
import { isRunLogStore, type RunLogStore, type ThreadRun } from "./log-store.js";
import { isFinal } from "./records.js";
import { resolveBlobs } from "../blobs.js";

export { ThreadBusyError } from "./thread-busy.js";

/**
 * Threads: a conversation that several runs continue, one after the other. A run given
 * `threadId` starts from the thread's conversation so far (the previous run's final messages)
 * plus its own input messages; when it ends, its final messages are the thread's conversation, and
 * the next run continues from there. Compaction (`config.context`) applies to that conversation
 * like to any other. Runs of one thread never interleave: starting one while the thread's latest
 * run has not ended is refused with `ThreadBusyError` (it does not wait).
 */

/** What `loadThread` tells about a thread. */
export interface ThreadView {
  threadId: string;
  /** The conversation as the thread's latest ended run left it ([] before any run ended). */
  messages: Message[];
  /** The thread's runs, oldest first (the latest may still be running). */
  runs: string[];
}

function checkThreadId(threadId: string, where: string): string {
  const parsed = ThreadIdSchema.safeParse(threadId);
  if (!parsed.success) throw new AgentInputError(`${where}.threadId`, parsed.error.issues[0]!.message);
  return parsed.data;
}

function needsLogStore(store: unknown, where: string): asserts store is RunLogStore {
  if (!isRunLogStore(store)) {
    throw new AgentInputError(
      where,
      "a thread lives in a store that keeps threads: pass one of jianmu's stores (MemoryCheckpointStore, SqliteCheckpointStore, a run queue store), e.g. runAgent(machine, input, { checkpoints: store })",
    );
  }
}

/** The thread's conversation so far and its runs. */
export async function loadThread(store: RunLogStore, threadId: string): Promise<ThreadView> {
  needsLogStore(store, "loadThread: store");
  const id = checkThreadId(threadId, "loadThread");
  const runs = await store.threadRuns(id);
  return { threadId: id, messages: await threadConversation(store, runs), runs: runs.map((r) => r.runId) };
}

/** The conversation a thread's runs (`store.threadRuns`) left: the final messages of its latest ended run ([] before one ended). */
export async function threadConversation(store: RunLogStore, runs: readonly ThreadRun[]): Promise<Message[]> {
  const ended = runs.filter((r) => isFinal(r.status)).at(-1);
  return ended ? finalMessages(store, ended.runId) : [];
}

/** A run's final messages, its large images and files put back (they are kept per run: the next run stores its own). */
async function finalMessages(store: RunLogStore, runId: string): Promise<Message[]> {
  return resolveBlobs((await store.outputOf(runId))?.messages ?? [], store, runId);
}

/** The conversation a run of the thread starts from: the final messages of the run before it ([] for the first). */
export async function conversationBefore(store: RunLogStore, threadId: string, runId: string): Promise<Message[]> {
  const runs = await store.threadRuns(threadId);
  const at = runs.findIndex((r) => r.runId === runId);
  const previous = at > 0 ? runs[at - 1] : undefined;
  return previous ? finalMessages(store, previous.runId) : [];
}

/**
 * Open the next run of `input.threadId` in `store` and give the machine's input for it: the thread's
 * conversation, then `input.messages`. Input without a thread passes unchanged.
 */
export async function startThreadRun(store: CheckpointStore | undefined, input: AgentInput, machine: string): Promise<AgentInput> {
  if (input.threadId === undefined) return input;
  const threadId = checkThreadId(input.threadId, "input");
  needsLogStore(store, "input.threadId");
  const runId = input.runId ?? crypto.randomUUID();
  await store.openThreadRun(threadId, runId, machine);
  const previous = await conversationBefore(store, threadId, runId);
  return { ...input, runId, messages: [...previous, ...(input.messages ?? [])] };
}

/** A thread's run that never got to its first checkpoint (its input was refused) leaves the thread free again. */
export async function abandonThreadRun(store: CheckpointStore | undefined, input: AgentInput): Promise<void> {
  if (input.threadId === undefined || input.runId === undefined || !isRunLogStore(store)) return;
  if ((await store.load(input.runId)) === undefined) await store.delete(input.runId);
}
