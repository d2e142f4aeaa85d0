import type { ToolRegistry } from "../../actors/tool-providers.js";
import type { ReActConfig } from "../contract/config.js";
import type { OutputPlan } from "./output.js";
import type { StateAccess } from "../contract/state-access.js";

/**
 * What one agent machine holds besides its chart: its resolved config, how it reads its state, its
 * structured-output plan and the live tools of its running actors. Made once by
 * `createReactMachine`; every machine `provide()` derives from it shares it (they share the chart's
 * config object, which is the key). Read through `runtimeOf`, or the helpers in react-machine.ts.
 */
export interface AgentRuntime {
  readonly config: ReActConfig;
  readonly access: StateAccess;
  readonly outputPlan: OutputPlan | undefined;
  /** Live tools keyed by run id and agent actor (two actors of one run each have their own). */
  readonly tools: ToolRegistry;
}

const runtimes = new WeakMap<object, AgentRuntime>();

/** Attach a machine's runtime (createReactMachine does, once per machine). */
export function attachRuntime(machine: { config: object }, runtime: AgentRuntime): void {
  runtimes.set(machine.config, runtime);
}

/** The runtime of a machine made by createReactMachine (or derived from one with provide()); undefined otherwise. */
export function runtimeOf(machine: { config: object }): AgentRuntime | undefined {
  return runtimes.get(machine.config);
}
