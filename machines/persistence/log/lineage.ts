import type { RunBranch } from "./log-store.js";

type MaybePromise<T> = T | Promise<T>;

/** What a store tells about one run for `lineage`: whether it exists, where it was forked from, and its forks. */
export interface LineageSource {
  forkOf(runId: string): MaybePromise<{ exists: boolean; forkedFrom?: { runId: string; checkpointId: string } }>;
  forks(runId: string): MaybePromise<string[]>;
}

/**
 * The fork tree holding `runId`, root first, then breadth-first: up through the runs it was forked
 * from (while they exist), then down through every fork. Shared by every store.
 */
export async function lineageOf(source: LineageSource, runId: string): Promise<RunBranch[]> {
  let root = runId;
  const start = await source.forkOf(runId);
  if (!start.exists) return [];
  for (let up = start, depth = 0; up.forkedFrom && depth < 1_000; depth++) {
    const parent = await source.forkOf(up.forkedFrom.runId);
    if (!parent.exists) break;
    root = up.forkedFrom.runId;
    up = parent;
  }
  const tree: RunBranch[] = [];
  const seen = new Set<string>();
  for (const queue = [root]; queue.length > 0 && tree.length < 10_000; ) {
    const id = queue.shift()!;
    if (seen.has(id)) continue;
    seen.add(id);
    const { forkedFrom } = await source.forkOf(id);
    tree.push({ runId: id, ...(forkedFrom && id !== root ? { forkedFrom } : {}) });
    queue.push(...(await source.forks(id)));
  }
  return tree;
}
