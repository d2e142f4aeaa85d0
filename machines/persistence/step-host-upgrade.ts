/*
 * Runs saved before the step host (snapshot version 1) held their model call and their tool batch as
 * children of AgentLLM and Executing (`<agent>.llm`, `<agent>.toolExecutor`) and no host. Restored as
 * they are into a chart that asks a host, such a child would answer with an event no state takes
 * any more, and the next request would find no host. So the saved children are brought to today's
 * shape before XState sees them: the step children go, the host comes in their place, and when it
 * starts the waiting state asks it again (`steps.ready`), as the step child would have run again.
 */

/** The children of a saved machine snapshot, as XState persists them. */
export type SavedChildren = Record<string, { src: string; snapshot?: { status?: string; children?: SavedChildren } } & Record<string, unknown>>;

/** The logic a saved child names, as a machine's implementations hold it (a nested agent's is a machine). */
interface MachineLike {
  id: string;
  implementations: { actors: Record<string, unknown> };
}

/** The step logic names a version-1 snapshot invoked per state (ACTOR_NAMES). */
const STEP_SOURCES = new Set(["llm", "toolExecutor"]);
const HOST_SOURCE = "steps";

/**
 * Brings `children` (the saved children of an active snapshot of `machine`) to the step host's shape,
 * in place, and those of every nested agent in them. A level that has its host already is left alone.
 */
export function upgradeStepChildren(machine: MachineLike, children: SavedChildren): void {
  for (const child of Object.values(children)) {
    const logic = machine.implementations.actors[child.src] as Partial<MachineLike> | undefined;
    const nested = child.snapshot?.children;
    if (logic?.implementations && typeof logic.id === "string" && child.snapshot?.status === "active" && nested && typeof nested === "object") {
      upgradeStepChildren(logic as MachineLike, nested);
    }
  }
  if (!(HOST_SOURCE in machine.implementations.actors)) return;
  const hostId = `${machine.id}.${HOST_SOURCE}`;
  if (hostId in children) return;
  for (const [id, child] of Object.entries(children)) if (STEP_SOURCES.has(child.src)) delete children[id];
  children[hostId] = { src: HOST_SOURCE, snapshot: { status: "active" }, syncSnapshot: false };
}
