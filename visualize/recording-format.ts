import { z } from "zod";
import { ChartSchema } from "./chart-schema.js";
import { DiffOpSchema } from "./context-diff-schema.js";
import { RECORDING_FORMAT, RECORDING_VERSION } from "./recording-version.js";

/**
 * The recording file: JSON Lines, one record per line, in the order things happened.
 *
 * - `header` (first line): format and version, the machine id, its statechart (for the viewer) and
 *   its config as the Stately inspector reads it (for replays), the start time, the redaction used.
 * - `actor`, `event`, `snapshot`, `microstep`, `action`: XState inspection events (`@xstate.*`).
 *   Actors are named by session id. Snapshots of machines carry the state value and the context as
 *   a diff against the previous snapshot of the same actor (the first one is a whole `set`);
 *   snapshots of other actors carry status, output and error. Microsteps carry the transitions
 *   taken, by chart transition id, which is how eventless steps (CheckAbort, StateCondition,
 *   CheckBudget, Retry) become visible. Actions carry only their type.
 * - `emit`: an emitted telemetry event (`actor.on("*")`), e.g. `model.call.completed`.
 * - `end` (last line, when the recorder was closed): end time and counts.
 *
 * `t` is milliseconds since the header's `startedAt` on the recorder's clock.
 */
export { RECORDING_FORMAT, RECORDING_VERSION };

const Seq = { seq: z.number().int().nonnegative(), t: z.number() };

export const HeaderSchema = z.object({
  k: z.literal("header"),
  format: z.literal(RECORDING_FORMAT),
  version: z.literal(RECORDING_VERSION),
  machineId: z.string(),
  chart: ChartSchema,
  /** The machine config, serialized the way `@statelyai/inspect` does (functions as `{ type }`). */
  definition: z.string(),
  startedAt: z.number(),
  redaction: z.object({ omitText: z.boolean(), maxTextChars: z.number().nullable() }),
});

export const ActorLineSchema = z.object({
  k: z.literal("actor"),
  ...Seq,
  actor: z.string(),
  /** The actor's id (e.g. "ReActAgent.llm"); for the root it is its session id. */
  id: z.string(),
  /**
   * Written by recordings of format 1 made before jianmu stopped reading XState's internal parent link.
   * Newer ones leave it out: the parent is the `source` of the actor's `xstate.init` event line
   * (`parentsOf`), which readers use when this is absent.
   */
  parent: z.string().optional(),
  root: z.string(),
  /** The logic's name: the invoke `src` or the machine id. */
  src: z.string().optional(),
  machine: z.boolean(),
});

export const EventLineSchema = z.object({
  k: z.literal("event"),
  ...Seq,
  actor: z.string(),
  source: z.string().optional(),
  root: z.string(),
  event: z.object({ type: z.string() }).loose(),
});

export const SnapshotLineSchema = z.object({
  k: z.literal("snapshot"),
  ...Seq,
  actor: z.string(),
  root: z.string(),
  /** The type of the event that led to it (the event itself is its own line). */
  eventType: z.string(),
  status: z.string(),
  value: z.unknown().optional(),
  context: z.array(DiffOpSchema).optional(),
  output: z.unknown().optional(),
  error: z.unknown().optional(),
});

export const MicrostepTransitionSchema = z.object({
  /** The chart transition id, when the transition is one of the machine's own. */
  id: z.string().optional(),
  source: z.string(),
  targets: z.array(z.string()),
  event: z.string(),
  reenter: z.boolean(),
});

export const MicrostepLineSchema = z.object({
  k: z.literal("microstep"),
  ...Seq,
  actor: z.string(),
  root: z.string(),
  eventType: z.string(),
  value: z.unknown(),
  transitions: z.array(MicrostepTransitionSchema),
});

export const ActionLineSchema = z.object({
  k: z.literal("action"),
  ...Seq,
  actor: z.string(),
  root: z.string(),
  action: z.string(),
});

export const EmitLineSchema = z.object({
  k: z.literal("emit"),
  ...Seq,
  actor: z.string().optional(),
  event: z.object({ type: z.string() }).loose(),
});

export const EndLineSchema = z.object({
  k: z.literal("end"),
  ...Seq,
  endedAt: z.number(),
  lines: z.number().int().nonnegative(),
  dropped: z.number().int().nonnegative(),
});

export const RecordLineSchema = z.discriminatedUnion("k", [
  ActorLineSchema,
  EventLineSchema,
  SnapshotLineSchema,
  MicrostepLineSchema,
  ActionLineSchema,
  EmitLineSchema,
  EndLineSchema,
]);

export type RecordingHeader = z.infer<typeof HeaderSchema>;
export type ActorLine = z.infer<typeof ActorLineSchema>;
export type EventLine = z.infer<typeof EventLineSchema>;
export type SnapshotLine = z.infer<typeof SnapshotLineSchema>;
export type MicrostepLine = z.infer<typeof MicrostepLineSchema>;
export type MicrostepTransition = z.infer<typeof MicrostepTransitionSchema>;
export type ActionLine = z.infer<typeof ActionLineSchema>;
export type EmitLine = z.infer<typeof EmitLineSchema>;
export type EndLine = z.infer<typeof EndLineSchema>;
export type RecordLine = z.infer<typeof RecordLineSchema>;
/** An inspection record: what `replayRecording` turns back into inspector events. */
export type InspectionLine = ActorLine | EventLine | SnapshotLine | MicrostepLine | ActionLine;
