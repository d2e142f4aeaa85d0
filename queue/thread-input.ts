import { conversationBefore } from "../machines/persistence/log/threads.js";
import type { RunStore } from "./run-store.js";
import type { ClaimedRun } from "./schemas.js";

/**
 * A claimed run of a thread, before its first checkpoint: its input messages come after the
 * thread's conversation so far (the final messages of the thread's run before it). A run with a
 * checkpoint already started from them.
 */
export async function withThreadConversation(store: RunStore, run: ClaimedRun): Promise<ClaimedRun> {
  const threadId = run.input.threadId;
  if (threadId === undefined || run.checkpoint !== undefined) return run;
  const previous = await conversationBefore(store, threadId, run.runId);
  if (previous.length === 0) return run;
  return { ...run, input: { ...run.input, messages: [...previous, ...(run.input.messages ?? [])] } };
}
