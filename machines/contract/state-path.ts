/** `{ Evaluating: { ChildRunning: "AgentLLM" } }` → `Evaluating.ChildRunning.AgentLLM`. */
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
