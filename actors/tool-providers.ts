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
 * The tools of each running agent, by run id. The LLM step sees tools as JSON (in context);
 * the executor needs the live objects, which this registry holds while the run is active.
 */
export class ToolRegistry {
  private readonly pending = new Map<string, Promise<ToolSet>>();
  private readonly ready = new Map<string, ToolSet>();
  private readonly closing = new Map<string, Promise<void>>();
  /** The static tools as JSON, made once: every run without providers shares it (context is never mutated). */
  readonly staticInfo: ToolInfo[];

  constructor(
    readonly staticSet: ToolSet,
    readonly hasProviders: boolean,
  ) {
    this.staticInfo = staticSet.info();
  }

  /** The live tools of a run (waits while providers are still starting, e.g. after a restore). */
  toolset(runId: string): Promise<ToolSet> {
    if (!this.hasProviders) return Promise.resolve(this.staticSet);
    return this.pending.get(runId) ?? Promise.reject(new Error(`the tools of run ${runId} are not available: its providers were closed or never started`));
  }

  /** The live tools when already started (synchronous, for validating approval edits). */
  toolsetNow(runId: string): ToolSet | undefined {
    return this.hasProviders ? this.ready.get(runId) : this.staticSet;
  }

  /** Resolves once every provider a run used has closed. */
  closed(runId: string): Promise<void> {
    return this.closing.get(runId) ?? Promise.resolve();
  }

  open(runId: string, build: () => Promise<ToolSet>): Promise<ToolSet> {
    const promise = build();
    this.pending.set(runId, promise);
    promise.then(
      (set) => {
        if (this.pending.get(runId) === promise) this.ready.set(runId, set);
      },
      () => undefined,
    );
    return promise;
  }

  close(runId: string, promise: Promise<ToolSet>): void {
    if (this.pending.get(runId) === promise) {
      this.pending.delete(runId);
      this.ready.delete(runId);
    }
    const done = promise.then(
      (set) => set.close(),
      () => undefined,
    );
    const tracked = done.catch(() => undefined).finally(() => {
      if (this.closing.get(runId) === tracked) this.closing.delete(runId);
    });
    this.closing.set(runId, tracked);
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
  return fromCallback<{ type: string }, ToolProvidersInput, ToolsLifecycleEvent>(({ input, sendBack }) => {
    // Nothing is sent once the agent has stopped this actor.
    let live = true;
    if (!registry.hasProviders) {
      queueMicrotask(() => live && sendBack({ type: "tools.ready", tools: registry.staticInfo }));
      return () => {
        live = false;
      };
    }
    const promise = registry.open(input.runId, async () => (await ToolSet.fromProviders(providers, context)).withTools(staticTools));
    promise.then(
      (set) => live && sendBack({ type: "tools.ready", tools: set.info() }),
      (error: unknown) => live && sendBack({ type: "tools.failed", error: toErrorInfo(error) }),
    );
    return () => {
      live = false;
      registry.close(input.runId, promise);
    };
  });
}
