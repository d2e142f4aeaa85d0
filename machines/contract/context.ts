import { z } from "zod";
import { PrintableIdSchema } from "./printable-id.js";
import { CallDecisionSchema, CallRecordSchema } from "../../actors/call-decision.js";
import { MessageSchema } from "../../actors/messages.js";
import { ModelRouteSchema } from "../../actors/model-route.js";
import { ToolInfoSchema, type ToolInfo } from "../../tools/tool.js";
import { GrantSchema, SpendStateSchema } from "./limits.js";
import { DelegationSchema } from "./loop-delegation.js";
import { OutputCheckSchema } from "./output-check.js";
import { RoundPlanSchema } from "./round-plan.js";
import type { StateAccess } from "./state-access.js";
import { TerminationSchema } from "./termination.js";
import { JianmuError } from "../../tools/jianmu-error.js";

// Built from a Termination; kept here too for the modules that always took it from the context.
export { errorTermination } from "./termination.js";

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

/**
 * The loop's own bookkeeping, beside the agent's state. JSON-safe like everything in context, and
 * saved in every snapshot: this schema is what a restored snapshot's `loop` is checked against, and
 * `LoopContext` is its type, so the two cannot drift apart.
 */
export const LoopContextSchema = z.object({
  /** Identifies this run in checkpoints, journals and telemetry. */
  runId: z.string().min(1),
  /** Completed iterations (the LoopUntilSuccess counter). */
  iteration: z.number().int().min(0),
  /** The merged tools, as the model and the guards see them. */
  tools: z.array(ToolInfoSchema),
  /** Guard decisions for the current batch of calls. Cleared every iteration. */
  decisions: z.array(CallDecisionSchema),
  /** Calls that started executing in this run (budgets and rate limits read it). */
  history: z.array(CallRecordSchema),
  termination: TerminationSchema.nullable(),
  // Optional: snapshots saved before nested agents, structured output and per-round plans existed lack them.
  /** While calls of the batch run in nested agents (agentTool, handoff): where they stand. */
  delegation: DelegationSchema().optional(),
  /** With `output`: what `CheckOutput` found in the model's last final output. */
  output: OutputCheckSchema.optional(),
  /** With `output`: invalid final outputs so far in this run (past `config.outputRetries` the run fails). */
  outputFailures: z.number().int().min(0).optional(),
  /** With `prepareRound`: this round's plan, as `PreparingRound` validated it. */
  round: RoundPlanSchema.optional(),
  // Optional too: snapshots saved before budgets held, guardrails and deadlines existed lack them.
  /** With `config.maxDurationMs`: when the run must end (epoch ms), fixed when it started, so a restored run keeps it. */
  deadline: z.number().optional(),
  /** A nested agent's grant from the agent that started it (`input.limits`). */
  limits: GrantSchema.optional(),
  /** With a budget: what servers may have counted beyond `usage`, and how far our prompt estimates fell short. */
  spend: SpendStateSchema.optional(),
  /** With input guardrails: those of each mode that have passed (or sent feedback) in this run, so they do not run again. */
  inputGuarded: z.object({ blocking: z.boolean().optional(), parallel: z.boolean().optional() }).optional(),
  /** With fallbacks: which of the model client's targets answered last (sticky fallbacks start the next call there). */
  modelRoute: ModelRouteSchema.optional(),
});
export type LoopContext = z.infer<typeof LoopContextSchema>;

/** The machine's whole context, as it must come back from storage. */
export const AgentContextSchema = z.object({
  /** The host state: the agent's fields (under `namespace` and `config.keys`) plus anything else. */
  state: z.record(z.string(), z.unknown()),
  loop: LoopContextSchema,
});
export type AgentContext = z.infer<typeof AgentContextSchema>;

/** A thread id (the conversation several runs continue). */
export const ThreadIdSchema = PrintableIdSchema;

/** What a run is started with: checked on the way in, so nothing else reaches context. */
export const AgentInputSchema = z
  .object({
    /** Appended to the conversation (the `messages` field, append reducer) before the run starts. */
    messages: z.array(MessageSchema).optional(),
    /** Host state to start from, e.g. the `state` of a previous run's output. */
    state: z.record(z.string(), z.unknown()).optional(),
    /** Reuse a run id (e.g. to resume journaled work); a fresh one is made otherwise. */
    runId: z.string().min(1).max(200).optional(),
    /**
     * Continue this thread. `runAgent` (with a store in `checkpoints`), the run queue and the web
     * handler load the thread's conversation from their store and start the run from it plus
     * `messages`; the machine itself only sees the resulting messages.
     */
    threadId: ThreadIdSchema.optional(),
    /** At most this much to spend (the agent that starts a nested agent passes what it has left): budgets take the smaller. */
    limits: GrantSchema.optional(),
  })
  .strict();
export type AgentInput = z.input<typeof AgentInputSchema>;

export { AgentOutputSchema, type AgentOutput } from "./agent-output.js";

/**
 * The context of a fresh run: validate the input, fill defaults, reset `run` and `step` fields
 * (a restored snapshot skips this, so it keeps them), then append the new messages.
 */
export function initialContext(rawInput: unknown, access: StateAccess, tools: ToolInfo[], run: { deadline?: number } = {}): AgentContext {
  const parsed = AgentInputSchema.safeParse(rawInput ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const field = ["input", ...issue.path.map(String)].join(".");
    throw new AgentInputError(field, `${issue.message} (input is { messages?: Message[], state?: object, runId?: string, threadId?: string, limits?: { tokens?, cost? } })`);
  }
  const input = parsed.data;
  let state = access.normalize(input.state ?? {});
  state = access.reset(access.reset(state, "run"), "step");
  state = access.append(state, "messages", input.messages ?? []);
  return {
    state,
    // The Web Crypto global, not node:crypto: that module's code then loads on the first run, not on `import "jianmu"`.
    loop: {
      runId: input.runId ?? crypto.randomUUID(),
      iteration: 0,
      tools,
      decisions: [],
      history: [],
      termination: null,
      ...(run.deadline !== undefined ? { deadline: run.deadline } : {}),
      ...(input.limits !== undefined ? { limits: input.limits } : {}),
    },
  };
}
