import type { InspectionEvent, Snapshot } from "xstate";

/**
 * The events a Stately inspector adapter receives, described here rather than imported from
 * `@statelyai/inspect`: replaying a recording needs only their shape, and `jianmu`'s own types must
 * not name an optional package (an app without it typechecks `jianmu` under skipLibCheck: false).
 * They are the same shapes as the package's `StatelyInspectionEvent`, so its adapters accept them.
 */
interface StatelyEnvelope {
  rootId: string | undefined;
  sessionId: string;
  createdAt: string;
  id: string;
  _version: string;
}

type InspectionOf<T extends InspectionEvent["type"]> = Extract<InspectionEvent, { type: T }>;

export type StatelySnapshotEvent = Pick<InspectionOf<"@xstate.snapshot">, "event" | "rootId" | "snapshot" | "type"> & StatelyEnvelope;

export type StatelyEventEvent = Pick<InspectionOf<"@xstate.event">, "event" | "rootId" | "type"> & { sourceId: string | undefined } & StatelyEnvelope;

export type StatelyActorEvent = { type: "@xstate.actor" } & {
  name: string;
  snapshot: { status?: Snapshot<unknown>["status"]; context?: unknown; value?: unknown; output?: unknown };
  definition: string | undefined;
  parentId: string | undefined;
} & StatelyEnvelope;

export type StatelyInspectionEvent = StatelySnapshotEvent | StatelyEventEvent | StatelyActorEvent;
