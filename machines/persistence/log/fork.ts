import { z } from "zod";
import { builtOnce } from "../../../tools/built-once.js";
import { PrintableIdSchema } from "../../contract/printable-id.js";
import { MessageSchema, type Message } from "../../../actors/messages.js";
import { conversationsIn } from "./conversation.js";
import { CheckpointError } from "../checkpoints/store.js";
import type { PersistedAgent } from "../persistence.js";
import type { SpendState } from "../../contract/limits.js";
import { inheritanceAt } from "./journal-inheritance.js";
import { blobHashesIn } from "../blobs.js";
import { isRunLogStore, type RunLogStore } from "./log-store.js";

/*
 * Forks: a new run that starts from any checkpoint of another. It gets its own id and its own
 * journal from the fork point on, shares what the original stored (its conversation is not copied),
 * and sees the original's journal for the calls decided before the fork point, so a call the
 * original ran is never run again (journal-inheritance.ts). It is restored like any run:
 * `restoreAgent(machine, await store.load(newId))`.
 */

const ForkOptionsSchema = builtOnce(() =>
  z
    .object({
      /** The checkpoint to start from (`checkpointId` from `store.history(runId)`). */
      from: z.string().min(1, "must name a checkpoint: a checkpointId from store.history(runId)"),
      /** The new run's id (a fresh one when absent). */
      runId: PrintableIdSchema.optional(),
      /**
       * The conversation to continue with instead of the checkpoint's: e.g. the same messages with
       * the last user message or a tool result replaced. Every copy of the conversation in the
       * checkpoint (the agent's state, the pending model call's input) is replaced.
       */
      messages: z.array(MessageSchema).optional(),
    })
    .strict(),
);
export type ForkOptions = z.input<ReturnType<typeof ForkOptionsSchema>>;

/** A JSON value with every `runId` property equal to `from` set to `to` (the run's id in context and in its children's inputs). */
function withRunId(value: unknown, from: string, to: string): unknown {
  if (Array.isArray(value)) return value.map((item) => withRunId(item, from, to));
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, key === "runId" && item === from ? to : withRunId(item, from, to)]));
}

/**
 * Replace the checkpoint's conversation: the message array in the agent's state that shares the
 * longest beginning with `messages`, and every other copy of it in the snapshot.
 */
function withMessages(snapshot: Record<string, unknown>, messages: Message[], runId: string): Record<string, unknown> {
  const candidates = conversationsIn(snapshot).map((array) => ({ array, text: JSON.stringify(array) }));
  if (candidates.length === 0) throw new CheckpointError(runId, "forkRun: the checkpoint holds no conversation to replace (options.messages)");
  const given = messages.map((m) => JSON.stringify(m));
  const shared = (c: { array: unknown[] }) => {
    let n = 0;
    while (n < c.array.length && n < given.length && JSON.stringify(c.array[n]) === given[n]) n++;
    return n;
  };
  const target = candidates.reduce((best, c) => (shared(c) > shared(best) ? c : best)).text;
  const replace = (value: unknown): unknown => {
    if (Array.isArray(value)) return JSON.stringify(value) === target ? structuredClone(messages) : value.map(replace);
    if (value === null || typeof value !== "object") return value;
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, replace(item)]));
  };
  return replace(snapshot) as Record<string, unknown>;
}

/**
 * An agent's snapshot as far as a fork marks it: its loop, and its children (nested agents, and
 * invoked steps with the input they restart from).
 */
interface MarkedSnapshot {
  context?: { loop?: { spend?: SpendState } };
  input?: { spend?: unknown; forkPoint?: true };
  children?: Record<string, { snapshot?: MarkedSnapshot } | undefined>;
}

/**
 * Mark the fork point in the agent's context and in every nested agent's (`SpendState.forkPoint`), and
 * in the saved input of a budgeted step waiting there (a summary, which restarts from that input): a
 * model call the fork asks for again there was the original run's, made and counted by it. The
 * snapshot is the fork's own copy (withRunId rebuilt it).
 */
function markForkPoint(snapshot: MarkedSnapshot): void {
  const loop = snapshot.context?.loop;
  if (loop) loop.spend = { ...loop.spend, forkPoint: true };
  if (snapshot.input?.spend !== undefined) snapshot.input.forkPoint = true;
  for (const child of Object.values(snapshot.children ?? {})) if (child?.snapshot) markForkPoint(child.snapshot);
}

/** The fork's first checkpoint: the source's, as run `runId`, maybe with another conversation. */
function forkRecord(source: PersistedAgent, runId: string, messages: Message[] | undefined, now: number): PersistedAgent {
  let snapshot = withRunId(source.snapshot, source.runId, runId) as Record<string, unknown>;
  if (messages) snapshot = withMessages(snapshot, messages, source.runId);
  markForkPoint(snapshot);
  return { ...source, runId, savedAt: now, snapshot: snapshot as PersistedAgent["snapshot"] };
}

/**
 * Start a new run from checkpoint `options.from` of run `runId`; resolves with the new run's id.
 * Continue it with `runAgent(machine, {}, { snapshot: restoreAgent(machine, await store.load(newId)), checkpoints: store })`.
 */
export async function forkRun(store: RunLogStore, runId: string, options: ForkOptions): Promise<string> {
  if (!isRunLogStore(store)) throw new CheckpointError(runId, "forkRun: the store must keep runs as logs (MemoryCheckpointStore, SqliteCheckpointStore or a run queue store)");
  const parsed = ForkOptionsSchema().safeParse(options);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new CheckpointError(runId, `forkRun: options.${issue.path.map(String).join(".") || "(all)"} ${issue.message} (options are { from, runId?, messages? })`);
  }
  const { from, messages } = parsed.data;
  const source = await store.load(runId, from);
  if (!source) throw new CheckpointError(runId, `forkRun: run ${runId} has no checkpoint ${from}; list them with store.history(${JSON.stringify(runId)})`);
  const newId = parsed.data.runId ?? crypto.randomUUID();
  if (newId === runId) throw new CheckpointError(runId, "forkRun: options.runId must differ from the original run's id");
  const record = forkRecord(source, newId, messages, Date.now());
  // A run's large images and files are kept under its own id: the fork gets those its checkpoint names, before the checkpoint.
  for (const sha256 of blobHashesIn(record)) {
    const blob = await store.getBlob(runId, sha256);
    if (blob === undefined) throw new CheckpointError(runId, `forkRun: checkpoint ${from} of run ${runId} refers to stored content sha256:${sha256} that the store does not have`);
    await store.putBlob(newId, sha256, blob);
  }
  await store.fork({ runId: newId, from: { runId, checkpointId: from }, record, inherit: inheritanceAt(source) });
  return newId;
}
