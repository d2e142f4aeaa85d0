import { z } from "zod";

/**
 * Where a run's first trace began, kept with the run so a restored run can link back to it.
 *
 * Tracing (jianmu/otel) registers it on the actor; `persistAgent` writes it into the saved snapshot
 * (`snapshot.trace`), and a restored actor carries it from the snapshot it was created with, so a
 * run saved, restored and saved again still points at its very first trace. It is plain JSON (the
 * W3C trace-context fields), which is why it can live in any checkpoint store; nothing here loads
 * OpenTelemetry.
 *
 * Why stored and not derived from the run id: OpenTelemetry's API cannot choose the ids of the spans
 * a tracer creates, so an id derived from the run id would name a span that was never exported, and
 * forcing the run into a trace of our making would detach it from the caller's own trace (the HTTP
 * request that started it, say).
 */
export const TraceLinkSchema = z
  .object({
    traceId: z.string().regex(/^[0-9a-f]{32}$/, "must be 32 lowercase hex digits"),
    spanId: z.string().regex(/^[0-9a-f]{16}$/, "must be 16 lowercase hex digits"),
    traceFlags: z.number().int().min(0).max(255),
  })
  .strict();

export type TraceLink = z.infer<typeof TraceLinkSchema>;

const links = new WeakMap<object, TraceLink>();

/** Remember the first trace of the run this actor drives (tracing calls it when it attaches). */
export function rememberTraceLink(actor: object, link: TraceLink): void {
  links.set(actor, link);
}

/**
 * The first trace of the run this actor drives: the one tracing registered, or the one carried by
 * the snapshot the actor was restored from. Undefined when the run was never traced.
 */
export function traceLinkOf(actor: object): TraceLink | undefined {
  const registered = links.get(actor);
  if (registered) return registered;
  const snapshot = (actor as { options?: { snapshot?: unknown } }).options?.snapshot;
  const carried = TraceLinkSchema.safeParse((snapshot as { trace?: unknown } | undefined)?.trace);
  return carried.success ? carried.data : undefined;
}
