/** `{ Evaluating: { ChildRunning: "AgentLLM" } }` → `Evaluating.ChildRunning.AgentLLM` (inside parallel states, the first region's: see `activeStatePaths`). */
export function statePath(value: unknown): string {
  const parts: string[] = [];
  let node = value;
  while (node !== null && typeof node === "object") {
    const [key] = Object.keys(node);
    if (key === undefined) break;
    parts.push(key);
    node = (node as Record<string, unknown>)[key];
  }
  if (typeof node === "string") parts.push(node);
  return parts.join(".");
}

/** `Evaluating.ChildRunning.AgentLLM` → `{ Evaluating: { ChildRunning: "AgentLLM" } }`: `statePath` undone. */
export function stateValue(path: string): unknown {
  return path.split(".").reduceRight<unknown>((below, key) => (below === undefined ? key : { [key]: below }), undefined);
}

/** Every active leaf of a state value as a dotted path: one per region inside parallel states, else `statePath`'s one. */
export function activeStatePaths(value: unknown, prefix = ""): string[] {
  if (typeof value === "string") return [prefix + value];
  if (value === null || typeof value !== "object") return [];
  return Object.entries(value).flatMap(([key, below]) => {
    const path = prefix + key;
    const leaves = activeStatePaths(below, `${path}.`);
    return leaves.length > 0 ? leaves : [path];
  });
}
