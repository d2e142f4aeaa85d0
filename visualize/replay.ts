import type { StatelyInspectionEvent, StatelySnapshotEvent } from "./stately-events.js";
import { applyDiff } from "./context-diff.js";
import type { Plain } from "./plain.js";
import { parentsOf, readRecording } from "./recording-reader.js";
import type { MicrostepTransition, RecordLine } from "./recording-format.js";

/** `_version` of replayed events: the @statelyai/inspect release whose event format they follow. */
export const STATELY_EVENT_VERSION = "0.7.2";

/** What an inspector adapter receives: `@statelyai/inspect`'s `Adapter` interface. */
export interface InspectorAdapterLike {
  send(event: StatelyInspectionEvent): void;
}

/** Microsteps and actions have no Stately event type; observers get them in this shape. */
export type ReplayedStepEvent =
  | { type: "@xstate.microstep"; sessionId: string; rootId: string; eventType: string; value: unknown; transitions: MicrostepTransition[]; createdAt: string }
  | { type: "@xstate.action"; sessionId: string; rootId: string; action: { type: string }; createdAt: string };

export type ReplayedEvent = StatelyInspectionEvent | ReplayedStepEvent;

export type ReplayTarget = InspectorAdapterLike | { next: (event: ReplayedEvent) => void } | ((event: ReplayedEvent) => void);

export interface ReplaySummary {
  /** Events delivered to the target. */
  events: number;
  machineId: string;
}

/**
 * Replay a recording's inspection events, in their recorded order, into an inspector: an adapter
 * (anything with `send`, like `@statelyai/inspect`'s WebSocket or browser adapters, or
 * `inspectAgent(...).adapter`) receives the Stately events (`@xstate.actor`, `@xstate.event`,
 * `@xstate.snapshot`, with whole contexts rebuilt from the recorded diffs); an observer or a
 * function additionally receives the microsteps and actions. Emitted telemetry is not inspection
 * and is not replayed. Contexts are as redacted as the recording.
 */
export async function replayRecording(file: string, target: ReplayTarget): Promise<ReplaySummary> {
  const parents = await parentsOf(file);
  const { header, lines } = await readRecording(file);
  const isAdapter = typeof target === "object" && "send" in target && typeof target.send === "function";
  const deliver: (event: ReplayedEvent) => void = isAdapter
    ? (event) => (target as InspectorAdapterLike).send(event as StatelyInspectionEvent)
    : typeof target === "function"
      ? target
      : (event) => (target as { next: (event: ReplayedEvent) => void }).next(event);

  const contexts = new Map<string, Plain | undefined>();
  let count = 0;
  const emit = (event: ReplayedEvent) => {
    if (isAdapter && (event.type === "@xstate.microstep" || event.type === "@xstate.action")) return;
    deliver(event);
    count += 1;
  };
  const createdAt = (line: RecordLine) => String(Math.round(header.startedAt + line.t));

  for await (const line of lines) {
    switch (line.k) {
      case "actor": {
        const name = line.id === line.actor ? (line.src ?? line.id) : line.id;
        const parent = parents.get(line.actor);
        const isRoot = line.machine && parent === undefined && line.src === header.machineId;
        emit({
          type: "@xstate.actor",
          name,
          sessionId: line.actor,
          parentId: parent,
          rootId: line.root,
          definition: isRoot ? header.definition : JSON.stringify({ id: name }),
          snapshot: { status: "active" },
          createdAt: createdAt(line),
          id: String(line.seq),
          _version: STATELY_EVENT_VERSION,
        });
        break;
      }
      case "event":
        emit({
          type: "@xstate.event",
          event: line.event,
          sourceId: line.source,
          sessionId: line.actor,
          rootId: line.root,
          createdAt: createdAt(line),
          id: String(line.seq),
          _version: STATELY_EVENT_VERSION,
        });
        break;
      case "snapshot": {
        const snapshot: { status: string; value?: unknown; context?: unknown; output?: unknown; error?: unknown } = { status: line.status };
        if (line.value !== undefined) snapshot.value = line.value;
        if (line.context !== undefined) contexts.set(line.actor, applyDiff(contexts.get(line.actor), line.context));
        if (contexts.has(line.actor)) snapshot.context = contexts.get(line.actor);
        if (line.output !== undefined) snapshot.output = line.output;
        if (line.error !== undefined) snapshot.error = line.error;
        emit({
          type: "@xstate.snapshot",
          event: { type: line.eventType },
          // Rebuilt from plain recorded data: the shape matches, XState's generic Snapshot type cannot say so.
          snapshot: snapshot as unknown as StatelySnapshotEvent["snapshot"],
          sessionId: line.actor,
          rootId: line.root,
          createdAt: createdAt(line),
          id: String(line.seq),
          _version: STATELY_EVENT_VERSION,
        });
        if (line.status !== "active") contexts.delete(line.actor);
        break;
      }
      case "microstep":
        emit({
          type: "@xstate.microstep",
          sessionId: line.actor,
          rootId: line.root,
          eventType: line.eventType,
          value: line.value,
          transitions: line.transitions,
          createdAt: createdAt(line),
        });
        break;
      case "action":
        emit({ type: "@xstate.action", sessionId: line.actor, rootId: line.root, action: { type: line.action }, createdAt: createdAt(line) });
        break;
      default:
        break;
    }
  }
  return { events: count, machineId: header.machineId };
}
