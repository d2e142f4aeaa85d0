import { fromCallback } from "xstate";
import type { ToolInfo, Tool } from "../tools/tool.js";
import type { ToolProvider } from "../tools/provider.js";
import { ToolSet } from "../tools/toolset.js";
import { toErrorInfo, type ErrorInfo } from "./errors.js";

export type ToolsLifecycleEvent = { type: "tools.ready"; tools: ToolInfo[] } | { type: "tools.failed"; error: ErrorInfo };

export interface ToolProvidersInput {
  runId: string;
}

/**
 * The tools of each running agent. The LLM step sees tools as JSON (in context); the executor needs
 * the live objects, which this registry holds while the agent is active. They are keyed by run id
 * *and* by the agent actor that opened them (its providers child's `sessionId`, `toolsOwnerOf`): two live actors continuing the same
 * run (a run restored twice) each have their own providers, and stopping one never takes the
 * other's tools away.
 */
export class ToolRegistry {
  private readonly pending = new Map<string, Promise<ToolSet>>();
  private readonly ready = new Map<string, ToolSet>();
  /** The last opened entry of each run, for callers that do not say which actor they are. */
  private readonly latest = new Map<string, string>();
  private readonly closing = new Map<string, Set<Promise<void>>>();
  /** The static tools as JSON, made once: every run without providers shares it (context is never mutated). */
  readonly staticInfo: ToolInfo[];

  constructor(
    readonly staticSet: ToolSet,
    readonly hasProviders: boolean,
  ) {
    this.staticInfo = staticSet.info();
  }

  private keyOf(runId: string, owner: string | undefined): string {
    return owner === undefined ? (this.latest.get(runId) ?? runId) : `${runId}\u0000${owner}`;
  }

  /** The live tools of a run's agent (waits while providers are still starting, e.g. after a restore). */
  toolset(runId: string, owner?: string): Promise<ToolSet> {
    if (!this.hasProviders) return Promise.resolve(this.staticSet);
    return (
      this.pending.get(this.keyOf(runId, owner)) ??
      Promise.reject(new Error(`the tools of run ${runId} are not available: its providers were closed or never started`))
    );
  }

  /** The live tools when already started (synchronous, for validating approval edits). */
  toolsetNow(runId: string, owner?: string): ToolSet | undefined {
    return this.hasProviders ? this.ready.get(this.keyOf(runId, owner)) : this.staticSet;
  }

  /** True while the providers of this run's agent are starting. */
  starting(runId: string, owner?: string): boolean {
    const key = this.keyOf(runId, owner);
    return this.hasProviders && this.pending.has(key) && !this.ready.has(key);
  }

  /** Resolves once every provider a run used has closed (whichever actors opened them). */
  closed(runId: string): Promise<void> {
    const all = this.closing.get(runId);
    return all ? Promise.all(all).then(() => undefined) : Promise.resolve();
  }

  open(runId: string, owner: string | undefined, build: () => Promise<ToolSet>): Promise<ToolSet> {
    const key = owner === undefined ? runId : `${runId}\u0000${owner}`;
    const promise = build();
    this.pending.set(key, promise);
    this.latest.set(runId, key);
    promise.then(
      (set) => {
        if (this.pending.get(key) === promise) this.ready.set(key, set);
      },
      () => undefined,
    );
    return promise;
  }

  close(runId: string, owner: string | undefined, promise: Promise<ToolSet>): void {
    const key = owner === undefined ? runId : `${runId}\u0000${owner}`;
    if (this.pending.get(key) === promise) {
      this.pending.delete(key);
      this.ready.delete(key);
      if (this.latest.get(runId) === key) this.latest.delete(runId);
    }
    const done = promise.then(
      (set) => set.close(),
      () => undefined,
    );
    let all = this.closing.get(runId);
    if (!all) this.closing.set(runId, (all = new Set()));
    const tracked: Promise<void> = done
      .catch(() => undefined)
      .finally(() => {
        all.delete(tracked);
        if (all.size === 0 && this.closing.get(runId) === all) this.closing.delete(runId);
      });
    all.add(tracked);
  }
}

/**
 * Which live tools an agent actor owns, as the registry keys them: the `sessionId` of the agent's own
 * `toolProviders` child, which opened them. Every agent actor (fresh, or each copy restored from one
 * snapshot) has its own child, so two actors of one run never share tools; and the agent finds its
 * child through its snapshot's `children` (public API), so nothing reads XState's internals.
 */
export function toolsOwnerOf(agent: { getSnapshot?: () => unknown }, providersId: string): string | undefined {
  const children = (agent.getSnapshot?.() as { children?: Record<string, { sessionId: string } | undefined> } | undefined)?.children;
  return children?.[providersId]?.sessionId;
}

/**
 * The owner of the tools an invoked step's input was made for, handed over by the agent's invoke
 * `input` mapper (keyed by the input object, claimed once by the step that starts with it). A step
 * restored from a snapshot was not made by a mapper here: it has none, and gets the run's latest tools.
 */
export class ToolOwners {
  private readonly owners = new WeakMap<object, string>();

  mark<T extends object>(input: T, owner: string | undefined): T {
    if (owner !== undefined) this.owners.set(input, owner);
    return input;
  }

  claim(input: object): string | undefined {
    const owner = this.owners.get(input);
    this.owners.delete(input);
    return owner;
  }
}

/**
 * Owns the providers for the lifetime of the agent: started with the agent (before the first
 * model call), closed when it reaches a final state or is stopped, whatever the reason.
 */
export function createToolProvidersActor<C>(
  registry: ToolRegistry,
  providers: readonly ToolProvider<C>[],
  staticTools: readonly Tool[],
  context: C,
) {
  return fromCallback<{ type: string }, ToolProvidersInput, ToolsLifecycleEvent>(({ input, sendBack, self }) => {
    // Nothing is sent once the agent has stopped this actor.
    let live = true;
    if (!registry.hasProviders) {
      queueMicrotask(() => live && sendBack({ type: "tools.ready", tools: registry.staticInfo }));
      return () => {
        live = false;
      };
    }
    // Keyed by this actor too (the agent's own providers child): another live actor of the same run has its own.
    const owner = self.sessionId;
    // Stopping the agent while providers start (a cancel) aborts them: initialize() gets the
    // signal, the providers are closed at once, and nobody waits for an initialize() that hangs.
    const starting = new AbortController();
    const promise = registry.open(input.runId, owner, async () => (await ToolSet.fromProviders(providers, context, starting.signal)).withTools(staticTools));
    promise.then(
      (set) => live && sendBack({ type: "tools.ready", tools: set.info() }),
      (error: unknown) => live && sendBack({ type: "tools.failed", error: toErrorInfo(error) }),
    );
    return () => {
      live = false;
      starting.abort();
      registry.close(input.runId, owner, promise);
    };
  });
}
