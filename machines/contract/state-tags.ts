/**
 * The tags the ReAct chart puts on its states (machines/react-machine.ts). Code elsewhere asks a
 * snapshot `hasTag(STATE_TAGS.approval)` instead of naming a state, so renaming a state in the chart
 * cannot silently change what is checkpointed or reported.
 */
export const STATE_TAGS = {
  /** A moment worth a checkpoint: the start of a step whose inputs are all in context (see checkpoints/moment.ts). */
  checkpoint: "checkpoint",
  /** The run waits for a person to approve or reject tool calls. */
  approval: "approval",
  /** The run rests here until something outside answers (an actor, a person, an event); the others pass through at once. */
  stable: "stable",
  /** The model call of a round runs (its reply streams into `streamingOutput`). */
  modelCall: "modelCall",
  /** A nested agent (agent tool or handoff) runs. */
  nestedAgent: "nestedAgent",
  /** The run waits for its tool providers to start. */
  startingTools: "startingTools",
} as const;

export type StateTag = (typeof STATE_TAGS)[keyof typeof STATE_TAGS];

/** What a tag lookup needs: a live snapshot (XState's `hasTag`). */
export interface TaggedSnapshot {
  hasTag(tag: string): boolean;
}

interface StateNodeLike {
  tags: readonly string[];
  states: Record<string, StateNodeLike>;
}

/**
 * The tags active at a state value, read from the machine's definition: for a stored (plain JSON)
 * snapshot, which has no `hasTag`.
 */
export function tagsAt(machine: { root: unknown }, value: unknown): Set<string> {
  const tags = new Set<string>();
  const visit = (node: StateNodeLike, at: unknown) => {
    for (const tag of node.tags) tags.add(tag);
    if (typeof at === "string") {
      const child = node.states[at];
      if (child) for (const tag of child.tags) tags.add(tag);
      return;
    }
    if (at === null || typeof at !== "object") return;
    for (const [key, below] of Object.entries(at as Record<string, unknown>)) {
      const child = node.states[key];
      if (child) visit(child, below);
    }
  };
  visit(machine.root as StateNodeLike, value);
  return tags;
}

/**
 * Whether the state a snapshot is in carries `tag`: a live snapshot answers itself; a stored one is
 * looked up in its machine's definition. A stored snapshot without its machine cannot be answered.
 */
export function hasStateTag(snapshot: { value: unknown; hasTag?: (tag: string) => boolean }, tag: StateTag, machine?: { root: unknown }): boolean {
  if (typeof snapshot.hasTag === "function") return snapshot.hasTag(tag);
  if (machine) return tagsAt(machine, snapshot.value).has(tag);
  throw new TypeError(`a stored snapshot has no tags to tell whether it is ${tag === STATE_TAGS.approval ? "waiting for approval" : `in a "${tag}" state`}: pass its machine too, e.g. runStatusOf(snapshot, machine)`);
}
