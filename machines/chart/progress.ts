import type { Progress } from "../../actors/progress.js";

/**
 * The progress an event carries: a progress event's batch, or the last batch riding on an actor's
 * result. Undefined when there is none or it is malformed (an event forged from outside is
 * ignored, not a crash).
 */
export function carriedProgress<E extends { type: string }>(event: { type: string }): Progress<E>[] | undefined {
  const carrier = event as { progress?: unknown; output?: { progress?: unknown } };
  const progress = "progress" in carrier ? carrier.progress : carrier.output?.progress;
  return Array.isArray(progress) && progress.every(isProgress) ? (progress as Progress<E>[]) : undefined;
}

function isProgress(item: unknown): boolean {
  if (item === null || typeof item !== "object") return false;
  const { at, event } = item as { at?: unknown; event?: { type?: unknown } | null };
  return typeof at === "number" && typeof event === "object" && event !== null && typeof event.type === "string";
}
