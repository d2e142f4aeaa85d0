import type { Actor, AnyStateMachine, Snapshot } from "xstate";
import { z } from "zod";
import { AgentContextSchema } from "../contract/context.js";
import { RunStatusSchema, type RunStatus } from "../contract/run-status.js";
import { stateAccessOf, type ReactMachine } from "../react-machine.js";
import { TraceLinkSchema, traceLinkOf } from "./trace-link.js";
import { statePath } from "../contract/state-path.js";
import { hasStateTag, STATE_TAGS } from "../contract/state-tags.js";
import { DEFAULT_SNAPSHOT_LIMITS, snapshotLimitProblem, type SnapshotLimits } from "./snapshot-limits.js";
import { JianmuError } from "../../tools/jianmu-error.js";
import { hasBlobRefs, type BlobCollector } from "./blobs.js";
import { upgradeStepChildren, type SavedChildren } from "./step-host-upgrade.js";

export { DEFAULT_SNAPSHOT_LIMITS, type SnapshotLimits } from "./snapshot-limits.js";

/**
 * Saving a run and restoring it, possibly in another process. XState's persisted snapshot is
 * wrapped in an envelope that says what it is (format, version, machine id) and summarises the run
 * (run id, state, status), so a store can list runs without reading snapshots, and a snapshot
 * from another machine, another version or a damaged file is refused with a reason instead of
 * resuming into nonsense.
 */

export const SNAPSHOT_FORMAT = "jianmu.snapshot";
/**
 * Bumped whenever a saved run of the previous version could not be restored correctly as it is.
 * 2: the model call and the tool batch run in the run's step host (actors/step-host.ts); a version-1
 * run is brought to that shape when restored (step-host-upgrade.ts).
 */
export const SNAPSHOT_VERSION = 2;
/** The versions this code restores: its own, and those it upgrades. */
const READABLE_VERSIONS = [1, SNAPSHOT_VERSION] as const;

export { RunStatusSchema, type RunStatus } from "../contract/run-status.js";

const ChildSchema = z.object({ src: z.string().min(1), snapshot: z.object({ status: z.string() }).loose() }).loose();

/** XState's `getPersistedSnapshot()`, plain JSON: what the envelope carries (its context is checked against the machine on restore). */
const SavedSnapshotSchema = z
  .object({
    status: z.enum(["active", "done", "error", "stopped"]),
    value: z.union([z.string(), z.record(z.string(), z.unknown())]),
    context: z.unknown(),
    // XState reads `item.id` of each entry when it restores; a damaged one must not reach it.
    historyValue: z.record(z.string(), z.array(z.object({ id: z.string() }).loose())).optional(),
    children: z.record(z.string(), ChildSchema),
    /** The run's first trace, when it was traced (machines/persistence/trace-link.ts). */
    trace: TraceLinkSchema.optional(),
  })
  .loose();

/**
 * A saved run: the envelope `persistAgent` writes and `readPersisted` checks. `PersistedAgent` is
 * this schema's input type (`readPersisted` hands back the checked value itself, not a parsed copy),
 * so what is written and what is accepted back are one definition.
 */
export const PersistedAgentSchema = z.object({
  format: z.literal(SNAPSHOT_FORMAT),
  version: z.union([z.literal(READABLE_VERSIONS[0]), z.literal(READABLE_VERSIONS[1])]),
  /** The machine id (`createReactMachine({ name })`) that can restore it. */
  machine: z.string().min(1),
  runId: z.string().min(1),
  /** Dotted path of the active state, e.g. `Evaluating.ChildRunning.ToolExecutor.AwaitingApproval`. */
  state: z.string().min(1),
  status: RunStatusSchema,
  /** Completed loop iterations when it was saved. */
  iteration: z.number().int().min(0),
  /** Epoch milliseconds. */
  savedAt: z.number().int().min(0),
  /**
   * XState's `getPersistedSnapshot()`, plain JSON. Typed as any JSON object, since its shape is
   * XState's; checked for the parts restoring relies on.
   */
  snapshot: z.record(z.string(), z.unknown()).pipe(SavedSnapshotSchema),
});
export type PersistedAgent = z.input<typeof PersistedAgentSchema>;

export type SnapshotProblem = "json" | "format" | "version" | "machine" | "shape" | "context" | "state" | "actors" | "limits" | "blobs";

/** A saved run that cannot be restored (or a run that cannot be saved). Says what is wrong and what to do. */
export class SnapshotError extends JianmuError {
  static override readonly errorCode = "SNAPSHOT_ERROR";
  override name = "SnapshotError";
  constructor(
    readonly problem: SnapshotProblem,
    message: string,
  ) {
    super(message);
  }
}

/** `a.b[0].c` from a zod issue path. */
function pathText(prefix: string, path: readonly PropertyKey[]): string {
  return path.reduce<string>((text, key) => (typeof key === "number" ? `${text}[${key}]` : `${text}.${String(key)}`), prefix);
}

const FRESH_RUN = "restore an earlier checkpoint or start a fresh run";

// ---- Saving ---------------------------------------------------------------------------------------

export { statePath };

interface SnapshotLike {
  status: string;
  value: unknown;
  output?: unknown;
  context?: unknown;
  /** A live snapshot's tag lookup; a stored (plain JSON) one has none: pass its machine instead. */
  hasTag?: (tag: string) => boolean;
}

/**
 * Where a run stands. Waiting for approval is the chart's `approval` tag: read from a live snapshot,
 * or for a stored one from the machine's definition (`machine`).
 */
export function runStatusOf(snapshot: SnapshotLike, machine?: { root: unknown }): RunStatus {
  if (snapshot.status === "done") {
    return (snapshot.output as { status?: unknown } | undefined)?.status === "succeeded" ? "succeeded" : "failed";
  }
  if (snapshot.status !== "active") return "failed";
  return hasStateTag(snapshot, STATE_TAGS.approval, machine) ? "awaitingApproval" : "running";
}

/**
 * Save a running (or finished) agent: `JSON.stringify(persistAgent(actor))` is what to store.
 * Restore it with `createActor(machine, { snapshot: restoreAgent(machine, saved) })`.
 */
export function persistAgent<M extends AnyStateMachine>(actor: Actor<M>, now: () => number = Date.now, blobs?: BlobCollector): PersistedAgent {
  let snapshot: Record<string, unknown>;
  try {
    // A JSON round trip: what is returned is exactly what a store will give back.
    // Given a collector (a checkpoint store that keeps blobs), large images and files become references (blobs.ts).
    const persisted = actor.getPersistedSnapshot();
    snapshot = JSON.parse(blobs ? blobs.text(persisted) : JSON.stringify(persisted)) as Record<string, unknown>;
  } catch (error) {
    throw new SnapshotError(
      "shape",
      `persistAgent: the snapshot is not plain JSON (${error instanceof Error ? error.message : String(error)}); keep only JSON values in the agent's state`,
    );
  }
  const loop = (snapshot.context as { loop?: { runId?: unknown; iteration?: unknown } } | undefined)?.loop;
  if (typeof loop?.runId !== "string" || typeof loop.iteration !== "number") {
    throw new SnapshotError("context", "persistAgent: this actor is not a jianmu agent (its context has no loop.runId); pass an actor of createReactMachine(...)");
  }
  const live = actor.getSnapshot() as SnapshotLike;
  const trace = traceLinkOf(actor);
  if (trace) snapshot.trace = trace;
  return {
    format: SNAPSHOT_FORMAT,
    version: SNAPSHOT_VERSION,
    machine: actor.logic.id,
    runId: loop.runId,
    state: statePath(snapshot.value),
    status: runStatusOf({ status: String(snapshot.status), value: snapshot.value, output: live.output }, actor.logic),
    iteration: loop.iteration,
    savedAt: now(),
    snapshot,
  };
}

// ---- Restoring ----------------------------------------------------------------------------------

/**
 * Check that a saved run is a jianmu snapshot of a version this code reads and has the envelope's
 * shape (not yet that it fits a particular machine). Accepts the object or its JSON text.
 */
export function readPersisted(saved: unknown, limits: SnapshotLimits = DEFAULT_SNAPSHOT_LIMITS): PersistedAgent {
  let value = saved;
  // Before anything recursive touches it (JSON.parse of the text is not, but what comes after is).
  const tooBig = (what: unknown) => {
    const problem = snapshotLimitProblem(what, limits);
    if (problem !== undefined) {
      throw new SnapshotError(
        "limits",
        `cannot restore the run: the saved snapshot is refused because ${problem} (limits: depth ${limits.maxDepth}, ${limits.maxChars} characters); ` +
          `it was tampered with or is not a jianmu checkpoint: ${FRESH_RUN}, or pass larger limits to restoreAgent if you trust it`,
      );
    }
  };
  if (typeof saved === "string") {
    tooBig(saved);
    try {
      value = JSON.parse(saved);
    } catch (error) {
      throw new SnapshotError(
        "json",
        `cannot restore the run: the saved snapshot is not valid JSON (${error instanceof Error ? error.message : String(error)}); the file or row is damaged or truncated: ${FRESH_RUN}`,
      );
    }
  }
  tooBig(value);
  return checkedEnvelope(value);
}

/**
 * The envelope checks of `readPersisted`, for a value whose size and nesting its caller has already
 * bounded (a store that rebuilt it from parts it checked one by one, machines/persistence/log/).
 */
export function checkedEnvelope(value: unknown): PersistedAgent {
  if (value === undefined) {
    throw new SnapshotError("format", "cannot restore the run: nothing was given (store.load(runId) returns undefined for a run it does not have: check the run id with store.list())");
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new SnapshotError("format", `cannot restore the run: expected a saved jianmu snapshot (an object from persistAgent), got ${describe(value)}`);
  }
  const record = value as Record<string, unknown>;
  if (record.format !== SNAPSHOT_FORMAT) {
    const bare = "value" in record && "context" in record && "children" in record;
    throw new SnapshotError(
      "format",
      bare
        ? `cannot restore the run: this is a bare XState snapshot without the "${SNAPSHOT_FORMAT}" envelope; save runs with persistAgent(actor), which wraps it`
        : `cannot restore the run: not a jianmu snapshot (format is ${describe(record.format)}, expected "${SNAPSHOT_FORMAT}"); pass what persistAgent(actor) returned`,
    );
  }
  if (!READABLE_VERSIONS.some((version) => version === record.version)) {
    const newer = typeof record.version === "number" && record.version > SNAPSHOT_VERSION;
    throw new SnapshotError(
      "version",
      `cannot restore the run: it was saved with snapshot format version ${describe(record.version)} and this jianmu reads versions ${READABLE_VERSIONS.join(" and ")}; ` +
        (newer ? "restore it with the newer jianmu that saved it, or start a fresh run" : "finish it with the jianmu version that saved it, or start a fresh run"),
    );
  }
  const parsed = PersistedAgentSchema.safeParse(record);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new SnapshotError("shape", `cannot restore the run: ${pathText("saved", issue.path)} ${issue.message}; the saved snapshot is damaged: ${FRESH_RUN}`);
  }
  return record as unknown as PersistedAgent;
}

/**
 * Validate a saved run against the machine that is to continue it and return the snapshot for
 * `createActor(machine, { snapshot })`. Throws `SnapshotError` naming what does not fit.
 *
 * The restored actor restarts the invoked children the snapshot holds, with their saved input:
 * the root's `toolProviders` opens the providers again, the approval timer waits for what is left
 * of the absolute deadline kept in context, and the step host starts again, so a run saved in
 * AgentLLM or Executing asks it for its model call or its batch again (the tool journal keeps the
 * executor from repeating calls). A version-1 run is brought to the step host's shape first.
 */
export function restoreAgent(machine: ReactMachine, saved: unknown, limits: SnapshotLimits = DEFAULT_SNAPSHOT_LIMITS): Snapshot<unknown> {
  const envelope = readPersisted(saved, limits);
  if (envelope.machine !== machine.id) {
    throw new SnapshotError(
      "machine",
      `cannot restore run ${envelope.runId}: it was saved by machine "${envelope.machine}" but this machine is "${machine.id}"; ` +
        `create the machine with createReactMachine({ name: "${envelope.machine}", ... }) to continue it`,
    );
  }
  // Saved text was parsed just now and belongs to no one else; only a caller's object needs copying.
  const snapshot = typeof saved === "string" ? envelope.snapshot : structuredClone(envelope.snapshot);
  if (hasBlobRefs(snapshot)) {
    throw new SnapshotError(
      "blobs",
      `cannot restore run ${envelope.runId}: its checkpoint keeps large images or files by reference, in the store that saved it; ` +
        "load it with loadCheckpoint(store, runId) (or resolveBlobs(record, store, runId)), which puts them back, and restore that",
    );
  }
  const context = AgentContextSchema.safeParse(snapshot.context);
  if (!context.success) {
    const issue = context.error.issues[0]!;
    throw new SnapshotError("context", `cannot restore run ${envelope.runId}: ${pathText("snapshot.context", issue.path)} ${issue.message}; the saved context is damaged: ${FRESH_RUN}`);
  }
  const access = stateAccessOf(machine);
  if (access) {
    const state = access.schema.safeParse(access.view(context.data.state));
    if (!state.success) {
      const issue = state.error.issues[0]!;
      const [field, ...rest] = issue.path.map(String);
      const where = field !== undefined ? [...access.pathOf(field), ...rest].join(".") : "(root)";
      throw new SnapshotError(
        "context",
        `cannot restore run ${envelope.runId}: state.${where} ${issue.message}; the saved state does not fit this machine's state schema (was it saved with another stateSchema, namespace or config.keys?)`,
      );
    }
    // A field the schema defaults but the saved state lacks (lost, or added to the schema since)
    // is restored with its default, as a fresh run would have it, instead of as undefined.
    (snapshot.context as { state: Record<string, unknown> }).state = access.write(context.data.state, state.data as Record<string, unknown>);
  }
  try {
    machine.resolveState({ value: snapshot.value as never, context: context.data as never });
  } catch {
    throw new SnapshotError(
      "state",
      `cannot restore run ${envelope.runId}: state "${envelope.state}" does not exist in machine "${machine.id}" (its statechart changed since the run was saved): ${FRESH_RUN}`,
    );
  }
  if (snapshot.status === "active") upgradeStepChildren(machine, snapshot.children as SavedChildren);
  checkChildren(envelope.runId, machine, snapshot.children as SavedChildren, "");
  return snapshot as unknown as Snapshot<unknown>;
}

/**
 * Every saved child must have logic to restore it from, nested agents' children included (a nested
 * agent's logic is its machine, which restores its own children from its own implementations).
 */
function checkChildren(runId: string, machine: { implementations: { actors: Record<string, unknown> } }, children: SavedChildren, where: string): void {
  for (const [id, child] of Object.entries(children)) {
    const logic = machine.implementations.actors[child.src] as { implementations?: { actors: Record<string, unknown> } } | undefined;
    if (!logic) {
      // XState would silently drop the child and the run would wait for it forever.
      throw new SnapshotError(
        "actors",
        `cannot restore run ${runId}: its invoked actor "${where}${id}" uses logic "${child.src}", which ${where ? "that nested agent's machine" : "this machine"} does not provide; provide it with machine.provide({ actors: { ${child.src}: ... } })`,
      );
    }
    const nested = child.snapshot?.children;
    if (logic.implementations && nested && typeof nested === "object") checkChildren(runId, logic as { implementations: { actors: Record<string, unknown> } }, nested, `${where}${id} › `);
  }
}

function describe(value: unknown): string {
  if (value === undefined) return "nothing";
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") return "an object";
  return JSON.stringify(value) ?? String(value);
}
