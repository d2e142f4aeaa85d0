import { checkTool, ToolDefinitionError, toolInfo, type Tool, type ToolInfo } from "./tool.js";
import { ToolProviderError, type ToolProvider } from "./provider.js";
import { JianmuError } from "./jianmu-error.js";

/** The function declaration the Chat Completions API expects for one tool. */
export interface FunctionSchema {
  type: "function";
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

/**
 * The merged tools of one agent. Merge order (contract section 2): tools of every provider in the
 * order given, a later provider replacing an earlier one's tool of the same name, then the
 * static tools, which replace everything. Immutable: `withTools` returns a new set.
 */
type Closable = Pick<ToolProvider<unknown>, "name" | "close">;

export class ToolSet {
  private constructor(
    private readonly byName: ReadonlyMap<string, Tool>,
    private readonly providers: readonly Closable[],
  ) {}

  static empty(): ToolSet {
    return new ToolSet(new Map(), []);
  }

  /**
   * Initialize each provider in order and collect its tools. If one fails, the ones already
   * started are closed again and a `ToolProviderError` names the failing provider.
   */
  static async fromProviders<C>(providers: readonly ToolProvider<C>[], context: C, signal?: AbortSignal): Promise<ToolSet> {
    const started: ToolProvider<C>[] = [];
    const byName = new Map<string, Tool>();
    for (const provider of providers) {
      let phase: "initialize" | "getTools" = "initialize";
      try {
        if (signal?.aborted) throw new ToolsetAbortedError();
        started.push(provider);
        await untilAborted(provider.initialize(context, signal), signal);
        phase = "getTools";
        const offered = new Set<string>();
        for (const tool of await untilAborted(provider.getTools(context), signal)) {
          checkTool(tool);
          if (offered.has(tool.name)) throw new ToolDefinitionError(tool.name, "name", "is offered twice by this provider: give each tool a unique name");
          offered.add(tool.name);
          byName.set(tool.name, tool);
        }
      } catch (error) {
        await closeAll(started);
        if (error instanceof ToolsetAbortedError) throw error;
        throw new ToolProviderError(provider.name, phase, error);
      }
    }
    return new ToolSet(byName, started);
  }

  /** Add static tools; they override provider tools of the same name. Two static tools may not share a name. */
  withTools(tools: readonly Tool[]): ToolSet {
    const seen = new Set<string>();
    const byName = new Map(this.byName);
    for (const tool of tools) {
      checkTool(tool);
      if (seen.has(tool.name)) {
        throw new ToolDefinitionError(tool.name, "name", "is used by two static tools: give each tool a unique name");
      }
      seen.add(tool.name);
      byName.set(tool.name, tool);
    }
    return new ToolSet(byName, this.providers);
  }

  get(name: string): Tool | undefined {
    return this.byName.get(name);
  }

  get size(): number {
    return this.byName.size;
  }

  list(): Tool[] {
    return [...this.byName.values()];
  }

  /** JSON-safe descriptions, in merge order. */
  info(): ToolInfo[] {
    return this.list().map(toolInfo);
  }

  /** Function-calling declarations for the model. */
  schemas(): FunctionSchema[] {
    return functionSchemas(this.info());
  }

  /** The human-readable tool list for the prompt. */
  describe(): string {
    return describeTools(this.info());
  }

  /** Close every provider that contributed to this set. */
  async close(): Promise<void> {
    await closeAll(this.providers);
  }
}

/**
 * A function of a tool list, computed once per list (by identity). For lists that never change:
 * an agent's tools stay the same array for a whole run, and the model is sent their schemas and
 * descriptions on every round.
 */
export function perToolList<T>(compute: (tools: readonly ToolInfo[]) => T): (tools: readonly ToolInfo[]) => T {
  const cache = new WeakMap<readonly ToolInfo[], T>();
  return (tools) => {
    let value = cache.get(tools);
    if (value === undefined) {
      value = compute(tools);
      cache.set(tools, value);
    }
    return value;
  };
}

export function functionSchemas(tools: readonly ToolInfo[]): FunctionSchema[] {
  return tools.map((tool) => ({
    type: "function",
    function: { name: tool.name, description: tool.description, parameters: tool.inputSchema },
  }));
}

export function describeTools(tools: readonly ToolInfo[]): string {
  if (tools.length === 0) return "No tools are available.";
  return tools
    .map((tool) => {
      const properties = (tool.inputSchema["properties"] ?? {}) as Record<string, { type?: unknown; description?: unknown }>;
      const required = new Set((tool.inputSchema["required"] as string[] | undefined) ?? []);
      const args = Object.entries(properties).map(([name, schema]) => {
        const type = typeof schema.type === "string" ? schema.type : "value";
        const note = typeof schema.description === "string" ? ` — ${schema.description}` : "";
        return `    ${name} (${type}${required.has(name) ? ", required" : ""})${note}`;
      });
      return [`- ${tool.name}: ${tool.description}`, ...args].join("\n");
    })
    .join("\n");
}

/** Close providers in reverse start order; one failing close does not keep the others open. */
/** The agent stopped while its providers were starting: they were closed, nothing more is wrong. */
export class ToolsetAbortedError extends JianmuError {
  static override readonly errorCode = "TOOLSET_ABORTED_ERROR";
  override name = "ToolsetAbortedError";
  constructor() {
    super("the agent stopped while its tool providers were starting; they were closed");
  }
}

/**
 * `work`, or a ToolsetAbortedError as soon as `signal` aborts: a provider that never settles must
 * not hold the agent. What `work` does afterwards is dropped (its rejection too).
 */
function untilAborted<T>(work: Promise<T> | T, signal: AbortSignal | undefined): Promise<T> {
  const promise = Promise.resolve(work);
  if (!signal) return promise;
  if (signal.aborted) {
    promise.catch(() => undefined);
    return Promise.reject(new ToolsetAbortedError());
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => {
      promise.catch(() => undefined);
      reject(new ToolsetAbortedError());
    };
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}

async function closeAll(providers: readonly Closable[]): Promise<void> {
  const errors: unknown[] = [];
  for (const provider of [...providers].reverse()) {
    try {
      await provider.close();
    } catch (error) {
      errors.push(new ToolProviderError(provider.name, "close", error));
    }
  }
  if (errors.length === 1) throw errors[0];
  if (errors.length > 1) throw new AggregateError(errors, "several tool providers failed to close");
}
