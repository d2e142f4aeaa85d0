import { createHook } from "node:async_hooks";

/**
 * The process's live handles by type (`Timeout`, `TCPSocketWrap`, `ProcessWrap`, ...), from
 * `process.getActiveResourcesInfo()`: what keeps the event loop alive, so what a leak looks like.
 */
export function activeResources(): Map<string, number> {
  const counts = new Map<string, number>();
  for (const type of process.getActiveResourcesInfo()) counts.set(type, (counts.get(type) ?? 0) + 1);
  return counts;
}

/** The types whose count grew from `before` to `after`, with both counts. */
export function grownResources(before: Map<string, number>, after: Map<string, number>): Record<string, { before: number; after: number }> {
  const grown: Record<string, { before: number; after: number }> = {};
  for (const [type, count] of after) {
    const was = before.get(type) ?? 0;
    if (count > was) grown[type] = { before: was, after: count };
  }
  return grown;
}

/**
 * Wait until no handle type has grown past the baseline: idle keep-alive sockets close on their
 * own after the HTTP keep-alive timeout (about 4 s), a leaked one never does. Resolves with what
 * is still grown when `limitMs` runs out (empty when everything was released).
 */
export async function settleResources(before: Map<string, number>, limitMs: number): Promise<Record<string, { before: number; after: number }>> {
  const started = Date.now();
  for (;;) {
    const grown = grownResources(before, activeResources());
    if (Object.keys(grown).length === 0 || Date.now() - started > limitMs) return grown;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}


/** Handle types whose survival after a run means a leak: timers, sockets, child processes and their pipes. */
export const LEAK_TYPES = ["Timeout", "TCPWRAP", "TCPCONNECTWRAP", "PROCESSWRAP", "PIPEWRAP", "PIPECONNECTWRAP"] as const;

/**
 * Every handle of the given types created from now on and not yet destroyed (closed, cleared or
 * fired). Unlike counting `getActiveResourcesInfo()` against a baseline, a handle of someone else's
 * that ends meanwhile cannot hide one of ours.
 */
export function trackNewHandles(types: readonly string[] = LEAK_TYPES) {
  const watched = new Set(types);
  const alive = new Map<number, string>();
  const hook = createHook({
    init(asyncId, type) {
      if (watched.has(type)) alive.set(asyncId, type);
    },
    destroy(asyncId) {
      alive.delete(asyncId);
    },
  });
  hook.enable();
  return {
    /** What is still alive, by type. */
    alive(): Record<string, number> {
      const counts: Record<string, number> = {};
      for (const type of alive.values()) counts[type] = (counts[type] ?? 0) + 1;
      return counts;
    },
    stop(): void {
      hook.disable();
    },
  };
}

/** Wait (polling every 100 ms, at most `limitMs`) until no tracked handle is alive; resolves with what still is. */
export async function settleHandles(handles: ReturnType<typeof trackNewHandles>, limitMs: number): Promise<Record<string, number>> {
  const started = Date.now();
  for (;;) {
    // The polling timer itself is destroyed once it has fired, before alive() looks.
    await new Promise((resolve) => setTimeout(resolve, 100));
    await new Promise((resolve) => setImmediate(resolve));
    const alive = handles.alive();
    if (Object.keys(alive).length === 0 || Date.now() - started > limitMs) return alive;
  }
}
