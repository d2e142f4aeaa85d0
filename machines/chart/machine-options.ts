import type { z } from "zod";
import type { ContextBuilder } from "../../actors/context-builder.js";
import type { Guard } from "../../actors/guard.js";
import { defineGuardrail, type Guardrail } from "../../actors/guardrail.js";
import type { ModelClient } from "../../actors/model-client.js";
import type { ToolRunner } from "../../actors/tool-executor.js";
import type { ToolJournal } from "../../actors/tool-journal.js";
import { JianmuError } from "../../tools/jianmu-error.js";
import type { ToolProvider } from "../../tools/provider.js";
import type { Tool } from "../../tools/tool.js";
import type { ReActConfig, ReActConfigInput } from "../contract/config.js";
import type { StateSchema } from "../contract/state.js";
import type { PrepareRound } from "./prepare-round.js";

/** What `createReactMachine` is given; `checkOptions` checks it before anything is built from it. */
export interface ReactMachineOptions<C = unknown, O extends z.ZodType = z.ZodType> {
  /** Machine id (default "ReActAgent"); invoked actor ids are prefixed with it. */
  name?: string;
  /** Read and write the agent's fields under `state[namespace]`. */
  namespace?: string;
  modelClient: ModelClient;
  tools?: readonly Tool[];
  toolProviders?: readonly ToolProvider<C>[];
  toolProviderContext?: C;
  toolRunner?: ToolRunner;
  /** Guards run in Preflight before every tool call. */
  constraints?: readonly Guard[];
  /** Builds the prompt; when given, `config.systemPrompt` is ignored. */
  contextBuilder?: ContextBuilder;
  /** Merged over `jianmu.yaml` and the built-in defaults. */
  config?: ReActConfigInput;
  /**
   * Which `jianmu.yaml` supplies the defaults: a path, or `false` for none (library code that must not
   * depend on the working directory). Default: `$JIANMU_CONFIG`, then `./jianmu.yaml` when it exists.
   */
  configFile?: string | false;
  /** `ReActState` or an extension of it. */
  stateSchema?: StateSchema;
  /** The clock used for deadlines, durations and timestamps (tests pin it). */
  now?: () => number;
  /** Records tool calls before their results are applied, so a restored run never runs one twice. */
  journal?: ToolJournal;
  /**
   * A zod schema for the final answer: the run succeeds only with a value that fits it, in
   * `output.output` (typed `z.infer<typeof schema>`). See `config.outputStrategy`, `config.outputRetries`.
   */
  output?: O;
  /** Decides each round's model, tools (a subset by name), toolChoice, extraParams and systemPrompt. Must be pure. */
  prepareRound?: PrepareRound;
  /** Check the run's input before the first model call (`mode: "blocking"`, the default) or beside it (`"parallel"`). See docs/guardrails.md. */
  inputGuardrails?: readonly Guardrail[];
  /** Check the final answer (and the typed output) before the run succeeds. */
  outputGuardrails?: readonly Guardrail[];
}

/** Stable names of the invoked actors, for `machine.provide({ actors: { ... } })`. */
export const ACTOR_NAMES = {
  llm: "llm",
  guard: "guard",
  toolExecutor: "toolExecutor",
  toolProviders: "toolProviders",
  approvalTimer: "approvalTimer",
  compaction: "compaction",
  inputGuardrails: "inputGuardrails",
  parallelGuardrails: "parallelGuardrails",
  outputGuardrails: "outputGuardrails",
  deadlineTimer: "deadlineTimer",
  /** The run's step host (actors/step-host.ts): runs `llm` and `toolExecutor` for AgentLLM and Executing. */
  steps: "steps",
} as const;

export class MachineOptionsError extends JianmuError {
  static override readonly errorCode = "MACHINE_OPTIONS_ERROR";
  override name = "MachineOptionsError";
  constructor(
    readonly field: string,
    problem: string,
  ) {
    super(`createReactMachine: options.${field} ${problem}`);
  }
}

export function checkOptions<C, O extends z.ZodType>(options: ReactMachineOptions<C, O>): void {
  if (!options || typeof options !== "object") throw new MachineOptionsError("(all)", "must be an object with at least { modelClient }");
  if (!options.modelClient || typeof options.modelClient.complete !== "function") {
    throw new MachineOptionsError("modelClient", "is required: pass ModelClient.resolve({ ... }) or scriptedModel([...]) from jianmu/testing");
  }
  if (options.name !== undefined && !/^[A-Za-z][\w-]{0,63}$/.test(options.name)) {
    throw new MachineOptionsError("name", `must start with a letter and hold only letters, digits, '_' or '-', got ${JSON.stringify(options.name)}`);
  }
  if (options.namespace !== undefined && !/^[A-Za-z_$][\w$]*$/.test(options.namespace)) {
    throw new MachineOptionsError("namespace", `must be a plain field name, got ${JSON.stringify(options.namespace)}`);
  }
  for (const [field, value] of [
    ["tools", options.tools],
    ["toolProviders", options.toolProviders],
    ["constraints", options.constraints],
  ] as const) {
    if (value !== undefined && !Array.isArray(value)) throw new MachineOptionsError(field, "must be an array");
  }
  if (options.journal !== undefined && !["started", "completed", "lookup", "forget"].every((m) => typeof (options.journal as unknown as Record<string, unknown>)[m] === "function")) {
    throw new MachineOptionsError("journal", "must implement ToolJournal { started, completed, lookup, forget }, e.g. a SqliteCheckpointStore");
  }
  if (options.output !== undefined && typeof (options.output as { safeParse?: unknown } | null)?.safeParse !== "function") {
    throw new MachineOptionsError("output", "must be a zod schema, e.g. z.object({ answer: z.string() })");
  }
  if (options.prepareRound !== undefined && typeof options.prepareRound !== "function") {
    throw new MachineOptionsError("prepareRound", "must be a function (view) => ({ model?, tools?, toolChoice?, extraParams?, systemPrompt? })");
  }
  options.constraints?.forEach((guard, index) => {
    if (typeof guard !== "function") throw new MachineOptionsError(`constraints[${index}]`, "must be a guard function (call, ctx) => decision");
  });
  checkGuardrails(options);
}

function checkGuardrails(options: Pick<ReactMachineOptions, "inputGuardrails" | "outputGuardrails">): void {
  for (const stage of ["inputGuardrails", "outputGuardrails"] as const) {
    const list = options[stage];
    if (list === undefined) continue;
    if (!Array.isArray(list)) throw new MachineOptionsError(stage, "must be an array of guardrails (defineGuardrail, maxLength, blocklist)");
    const names = new Set<string>();
    list.forEach((guardrail: Guardrail, index) => {
      try {
        defineGuardrail(guardrail);
      } catch (error) {
        throw new MachineOptionsError(`${stage}[${index}]`, `is not a guardrail: ${error instanceof Error ? error.message : String(error)}`);
      }
      if (stage === "outputGuardrails" && guardrail.mode === "parallel") {
        throw new MachineOptionsError(`${stage}[${index}].mode`, `"parallel" is for input guardrails (an output guardrail checks the finished answer)`);
      }
      if (names.has(guardrail.name)) throw new MachineOptionsError(`${stage}[${index}].name`, `repeats "${guardrail.name}": each guardrail of a stage needs its own name`);
      names.add(guardrail.name);
    });
  }
}

/** Settings that only make sense together, checked on the resolved config (jianmu.yaml included). */
export function checkResolvedConfig(config: ReActConfig): void {
  if (config.maxBudgetCost !== undefined && config.pricing === undefined) {
    throw new MachineOptionsError("config.maxBudgetCost", 'needs config.pricing: the price of each model the run may call, e.g. { pricing: { "gpt-4o-mini": { input: 0.15, output: 0.6 } } }');
  }
}
