import type { AnyActorRef, AnyStateMachine, EventObject, InspectionEvent, Observer } from "xstate";
import type { AgentInput, AgentOutput } from "../machines/contract/context.js";
import type { ReactMachine } from "../machines/react-machine.js";
import { runAgent, watchedRun, type RunOptions } from "../machines/runner.js";
import { describeMachine, transitionIdsOf } from "./chart.js";
import { diffValues, type DiffOp } from "./context-diff.js";
import { JsonlWriter } from "./jsonl-writer.js";
import { isPlainObject, toPlain, type Plain } from "./plain.js";
import { createRedactor, redactAt, type Redactor } from "./redact.js";
import type { MicrostepTransition, RecordingHeader } from "./recording-format.js";
import { RECORDING_FORMAT, RECORDING_VERSION } from "./recording-version.js";

export interface RecorderOptions {
  /** The JSONL file to write (its directory is created). */
  path: string;
  /** The machine being run: its statechart goes into the header for the viewer. */
  machine: AnyStateMachine;
  /** Exact secret strings to keep out of the file, besides keys found by name and pattern. */
  secrets?: readonly (string | undefined)[];
  /** Replace message contents and other prompt text by their length (default false: the viewer shows them). */
  omitText?: boolean;
  /** Longer strings are cut (default 8000 characters; null = never). */
  maxTextChars?: number | null;
  /** Bytes of lines held while the disk catches up before lines are dropped (default 8 MiB). */
  maxQueuedBytes?: number;
  /** Clock for `startedAt` and line times (default Date.now). */
  now?: () => number;
}

export interface RecordingSummary {
  path: string;
  /** Lines written, header and end line included. */
  lines: number;
  /** Lines dropped because the disk could not keep up. */
  dropped: number;
  startedAt: number;
  endedAt: number;
}

/** The parts of an actor ref the recorder reads (XState's public type exposes fewer). */
interface ActorRefInternals {
  sessionId: string;
  id?: string;
  src?: unknown;
  logic?: { id?: string; root?: unknown; config?: unknown };
  getSnapshot?: () => unknown;
}
interface TransitionInternals {
  source: { id: string };
  target?: readonly { id: string }[];
  eventType: string;
  reenter?: boolean;
}

const MESSAGE_ROLES = new Set(["system", "user", "assistant", "tool"]);

/** Message histories are recorded once, through the root context's diffs; elsewhere they become a count. */
function omitMessageLists(value: Plain): Plain {
  if (Array.isArray(value)) {
    if (value.length > 0 && value.every((item) => isPlainObject(item) && typeof item["role"] === "string" && MESSAGE_ROLES.has(item["role"]))) {
      return `‹omitted ${value.length} messages›`;
    }
    return value.map(omitMessageLists);
  }
  if (isPlainObject(value)) {
    const out: { [key: string]: Plain } = {};
    for (const [key, child] of Object.entries(value)) out[key] = omitMessageLists(child);
    return out;
  }
  return value;
}

/**
 * Writes a run to a JSONL recording as it happens: every XState inspection event (pass
 * `recorder.inspect` to `createActor`) and every emitted telemetry event (`recorder.onEvent`, or
 * `attach(actor)`). Memory stays bounded: lines stream to disk, and per actor only the last
 * context is held (by reference) to compute the next diff. Secrets are redacted before writing.
 */
export class RunRecorder {
  readonly path: string;
  readonly startedAt: number;
  /** The inspection observer to pass as `createActor(machine, { inspect })`. */
  readonly inspect: Observer<InspectionEvent>;
  /** Record one emitted event (`actor.on("*", recorder.onEvent)` or `runAgent(..., { onEvent })`). */
  readonly onEvent: (event: EventObject) => void;

  private readonly writer: JsonlWriter;
  private readonly now: () => number;
  private readonly redact: Redactor;
  private readonly transitionIds: WeakMap<object, string>;
  private readonly contexts = new Map<string, unknown>();
  private readonly actors = new Set<string>();
  private seq = 0;
  private closed: Promise<RecordingSummary> | undefined;

  constructor(options: RecorderOptions) {
    this.path = options.path;
    this.now = options.now ?? Date.now;
    this.startedAt = this.now();
    const maxTextChars = options.maxTextChars === undefined ? 8000 : options.maxTextChars;
    const omitText = options.omitText === true;
    this.redact = createRedactor({
      ...(options.secrets ? { secrets: options.secrets } : {}),
      omitText,
      ...(maxTextChars !== null ? { maxTextChars } : {}),
    });
    this.transitionIds = transitionIdsOf(options.machine);
    this.writer = new JsonlWriter(options.path, options.maxQueuedBytes !== undefined ? { maxQueuedBytes: options.maxQueuedBytes } : {});
    // The machine config is code, not conversation: only secrets are removed from it.
    const redactSecrets = createRedactor(options.secrets ? { secrets: options.secrets } : {});
    const header: RecordingHeader = {
      k: "header",
      format: RECORDING_FORMAT,
      version: RECORDING_VERSION,
      machineId: options.machine.id,
      chart: describeMachine(options.machine),
      definition: JSON.stringify(redactSecrets(toPlain(options.machine.config, { functions: "name", maxDepth: 40 }))),
      startedAt: this.startedAt,
      redaction: { omitText, maxTextChars },
    };
    this.writer.write(header);
    this.inspect = { next: (event) => this.record(event) };
    this.onEvent = (event) => this.recordEmitted(event);
  }

  /** Subscribe to an actor's emitted events and note it as an actor; returns the unsubscribe function. */
  attach(actor: AnyActorRef): () => void {
    this.noteActor(actor as unknown as ActorRefInternals, undefined);
    const subscription = actor.on("*", (event: EventObject) => this.recordEmitted(event, actor.sessionId));
    return () => subscription.unsubscribe();
  }

  private line(k: string, fields: Record<string, unknown>): void {
    if (this.closed) return;
    this.writer.write({ k, seq: this.seq++, t: this.now() - this.startedAt, ...fields });
  }

  private clean(value: unknown, key?: string): Plain {
    return this.redact(omitMessageLists(toPlain(value)), key);
  }

  private noteActor(ref: ActorRefInternals, rootId: string | undefined): void {
    if (this.actors.has(ref.sessionId)) return;
    this.actors.add(ref.sessionId);
    const isMachine = ref.logic !== undefined && ref.logic.root !== undefined;
    const src = typeof ref.src === "string" ? ref.src : isMachine ? ref.logic?.id : undefined;
    this.line("actor", {
      actor: ref.sessionId,
      id: ref.id ?? ref.sessionId,
      root: rootId ?? ref.sessionId,
      ...(src !== undefined ? { src } : {}),
      machine: isMachine,
    });
  }

  /** Record one inspection event (what `inspect.next` does). */
  record(event: InspectionEvent): void {
    const ref = event.actorRef as unknown as ActorRefInternals;
    const actor = ref.sessionId;
    const root = event.rootId;
    switch (event.type) {
      case "@xstate.actor":
        this.noteActor(ref, root);
        return;
      case "@xstate.event": {
        this.noteActor(ref, root);
        const source = (event.sourceRef as unknown as ActorRefInternals | undefined)?.sessionId;
        this.line("event", { actor, ...(source !== undefined ? { source } : {}), root, event: this.clean(event.event) });
        return;
      }
      case "@xstate.snapshot":
        this.noteActor(ref, root);
        this.line("snapshot", { actor, root, eventType: event.event.type, ...this.snapshotFields(actor, event.snapshot) });
        return;
      case "@xstate.microstep": {
        const snapshot = event.snapshot as { value?: unknown };
        const transitions: MicrostepTransition[] = event._transitions.map((raw) => {
          const t = raw as unknown as TransitionInternals;
          const id = this.transitionIds.get(raw);
          return {
            ...(id !== undefined ? { id } : {}),
            source: t.source.id,
            targets: (t.target ?? []).map((target) => target.id),
            event: t.eventType,
            reenter: t.reenter === true,
          };
        });
        this.line("microstep", { actor, root, eventType: event.event.type, value: toPlain(snapshot.value), transitions });
        return;
      }
      case "@xstate.action":
        this.line("action", { actor, root, action: event.action.type });
        return;
      default:
        return;
    }
  }

  private snapshotFields(actor: string, raw: unknown): Record<string, unknown> {
    const snapshot = (raw ?? {}) as { status?: string; value?: unknown; context?: unknown; output?: unknown; error?: unknown };
    const fields: Record<string, unknown> = { status: snapshot.status ?? "active" };
    if ("value" in snapshot) {
      fields["value"] = toPlain(snapshot.value);
      const previous = this.contexts.get(actor);
      const ops: DiffOp[] = this.contexts.has(actor) ? diffValues(previous, snapshot.context) : [{ op: "set", path: [], value: snapshot.context }];
      if (ops.length > 0) fields["context"] = ops.map((op) => this.cleanOp(op));
      this.contexts.set(actor, snapshot.context);
    }
    if (snapshot.output !== undefined) fields["output"] = this.clean(snapshot.output, "output");
    if (snapshot.error !== undefined) fields["error"] = this.clean(snapshot.error, "error");
    // A finished actor sends no more snapshots: forget its context.
    if (fields["status"] !== "active") this.contexts.delete(actor);
    return fields;
  }

  private cleanOp(op: DiffOp): DiffOp {
    if (op.op === "set") return { op: "set", path: op.path, value: redactAt(this.redact, op.path, toPlain(op.value)) };
    if (op.op === "push") return { op: "push", path: op.path, items: op.items.map((item) => redactAt(this.redact, op.path, toPlain(item))) };
    return op;
  }

  private recordEmitted(event: EventObject, actor?: string): void {
    this.line("emit", { ...(actor !== undefined ? { actor } : {}), event: this.clean(event) });
  }

  /** Write the end line and close the file. Safe to call more than once. Rejects with a RecordingError if writing failed. */
  close(): Promise<RecordingSummary> {
    if (!this.closed) {
      const endedAt = this.now();
      const end = { k: "end", seq: this.seq++, t: endedAt - this.startedAt, endedAt, lines: this.writer.lines + this.writer.pending + 1, dropped: this.writer.dropped };
      this.contexts.clear();
      this.closed = this.writer.close(end).then(() => ({
        path: this.path,
        lines: this.writer.lines,
        dropped: this.writer.dropped,
        startedAt: this.startedAt,
        endedAt,
      }));
    }
    return this.closed;
  }
}

/**
 * Record an actor that is about to start: inspection events through `actor.system.inspect`,
 * emitted events through `actor.on("*")`. The recording closes by itself when the actor reaches
 * a final state, fails or is stopped; `await recorder.close()` for the summary.
 *
 * Attaching after `createActor` misses what the actor's constructor already reported (its own
 * `@xstate.actor` and those of the children its initial state invokes): those actors are written
 * when first seen instead. To capture the run from its very first event, create the recorder
 * first and pass `createActor(machine, { inspect: recorder.inspect })`, then `recorder.attach(actor)`.
 */
export function recordActor(actor: AnyActorRef, options: Omit<RecorderOptions, "machine"> & { machine?: AnyStateMachine }): RunRecorder {
  const machine = options.machine ?? ((actor as unknown as { logic?: AnyStateMachine }).logic as AnyStateMachine);
  const recorder = new RunRecorder({ ...options, machine });
  recorder.attach(actor);
  actor.system.inspect(recorder.inspect);
  // Observers hear "complete" before the final snapshot is inspected: close once that has passed.
  const finish = () => setTimeout(() => void recorder.close().catch(() => undefined), 0);
  actor.subscribe({ complete: finish, error: finish });
  return recorder;
}

export interface RecordRunOptions extends RunOptions, Omit<RecorderOptions, "machine"> {}

/**
 * `runAgent` with a recording: resolves with the output and the recording's summary once both
 * the run and the file are finished. Events still reach `options.onEvent` / `options.inspect`.
 */
export async function recordRun(
  machine: ReactMachine,
  input: AgentInput,
  options: RecordRunOptions,
): Promise<{ output: AgentOutput; recording: RecordingSummary }> {
  const { path, secrets, omitText, maxTextChars, maxQueuedBytes, now, ...runOptions } = options;
  const recorder = new RunRecorder({
    path,
    machine,
    ...(secrets !== undefined ? { secrets } : {}),
    ...(omitText !== undefined ? { omitText } : {}),
    ...(maxTextChars !== undefined ? { maxTextChars } : {}),
    ...(maxQueuedBytes !== undefined ? { maxQueuedBytes } : {}),
    ...(now !== undefined ? { now } : {}),
  });
  let output: AgentOutput;
  try {
    output = await runAgent(machine, input, watchedRun(runOptions, { inspect: (event) => recorder.record(event), onEvent: recorder.onEvent }));
  } catch (error) {
    await recorder.close().catch(() => undefined);
    throw error;
  }
  return { output, recording: await recorder.close() };
}
