import { z } from "zod";
import type { CallDecision, CallRecord } from "../actors/guard.js";
import { MessageSchema, type Message } from "../actors/messages.js";
import type { Usage } from "../actors/model-client.js";
import type { ToolInfo } from "../tools/tool.js";
import type { Delegation } from "./delegation.js";
import type { ErrorInfo, Termination } from "./events.js";
import type { OutputCheck } from "./output.js";
import type { RoundPlan } from "./prepare-round.js";
import type { StateAccess, HostState } from "./state-access.js";
import { JianmuError } from "../tools/jianmu-error.js";

/** The input given to a run is not of the expected shape. Names the field. */
export class AgentInputError extends JianmuError {
  static override readonly errorCode = "AGENT_INPUT_ERROR";
  override name = "AgentInputError";
  constructor(
    readonly field: string,
    problem: string,
  ) {
    super(`${field}: ${problem}`);
  }
}

/** The loop's own bookkeeping, beside the agent's state. JSON-safe like everything in context. */
export interface LoopContext {
  /** Identifies this run in checkpoints, journals and telemetry. */
  runId: string;
  /** Completed iterations (the LoopUntilSuccess counter). */
  iteration: number;
  /** The merged tools, as the model and the guards see them. */
  tools: ToolInfo[];
  /** Guard decisions for the current batch of calls. Cleared every iteration. */
  decisions: CallDecision[];
  /** Calls that started executing in this run (budgets and rate limits read it). */
  history: CallRecord[];
  termination: Termination | null;
  /** While calls of the batch run in nested agents (agentTool, handoff): where they stand. */
  delegation?: Delegation;
  /** With `output`: what `CheckOutput` found in the model's last final output. */
  output?: OutputCheck;
  /** With `output`: invalid final outputs so far in this run (past `config.outputRetries` the run fails). */
  outputFailures?: number;
  /** With `prepareRound`: this round's plan, as `PreparingRound` validated it. */
  round?: RoundPlan;
}

export interface AgentContext {
  /** The host state: the agent's fields (under `namespace` and `config.keys`) plus anything else. */
  state: HostState;
  loop: LoopContext;
}

export interface AgentInput {
  /** Appended to the conversation (the `messages` field, append reducer) before the run starts. */
  messages?: Message[];
  /** Host state to start from, e.g. the `state` of a previous run's output. */
  state?: Record<string, unknown>;
  /** Reuse a run id (e.g. to resume journaled work); a fresh one is made otherwise. */
  runId?: string;
}

/** `T` is the type of the structured output: `z.infer<typeof schema>` of `createReactMachine({ output: schema })`. */
export interface AgentOutput<T = unknown> {
  status: "succeeded" | "failed";
  finalAnswer: string | null;
  /** With `output`: the validated final output (present when the run succeeded). */
  output?: T;
  messages: Message[];
  rounds: number;
  usage: Usage;
  toolEffects: string[];
  iterations: number;
  runId: string;
  /** The whole host state, ready to be passed to the next run. */
  state: Record<string, unknown>;
  /** Why a failed run ended (absent when it succeeded). */
  termination?: Termination;
}

const InputSchema = z
  .object({
    messages: z.array(MessageSchema).optional(),
    state: z.record(z.string(), z.unknown()).optional(),
    runId: z.string().min(1).max(200).optional(),
  })
  .strict();

/**
 * The context of a fresh run: validate the input, fill defaults, reset `run` and `step` fields
 * (a restored snapshot skips this, so it keeps them), then append the new messages.
 */
export function initialContext(rawInput: unknown, access: StateAccess, tools: ToolInfo[]): AgentContext {
  const parsed = InputSchema.safeParse(rawInput ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const field = ["input", ...issue.path.map(String)].join(".");
    throw new AgentInputError(field, `${issue.message} (input is { messages?: Message[], state?: object, runId?: string })`);
  }
  const input = parsed.data;
  let state = access.normalize(input.state ?? {});
  state = access.reset(access.reset(state, "run"), "step");
  state = access.append(state, "messages", input.messages ?? []);
  return {
    state,
    // The Web Crypto global, not node:crypto: that module's code then loads on the first run, not on `import "jianmu"`.
    loop: { runId: input.runId ?? crypto.randomUUID(), iteration: 0, tools, decisions: [], history: [], termination: null },
  };
}

export function errorTermination(reason: Termination["reason"], iterations: number, error?: ErrorInfo, detail?: string): Termination {
  return { reason, iterations, ...(error ? { error } : {}), ...(detail ? { detail } : {}) };
}
