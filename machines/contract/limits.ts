import { z } from "zod";

/*
 * What a run keeps about its budgets and its deadline besides `usage` (machines/chart/spend.ts reads
 * them). All optional in `LoopContextSchema`, so snapshots saved before them restore unchanged.
 */

/**
 * What the agent that started a nested agent (an agent tool, a handoff) let it spend: what it had
 * left then. The nested agent's budgets are the smaller of these and its own config's.
 */
export const GrantSchema = z
  .object({
    /** Tokens, like `config.maxBudgetTokens`. */
    tokens: z.number().int().min(0).optional(),
    /** Currency, like `config.maxBudgetCost`. */
    cost: z.number().min(0).optional(),
  })
  .strict();
export type Grant = z.infer<typeof GrantSchema>;

/** The run's spending beyond what servers reported in `usage`. */
export const SpendStateSchema = z.object({
  /** Prompt estimates are multiplied by this: the most a server counted past an estimate in this run (≥ 1). */
  promptScale: z.number().min(1).optional(),
  /** What attempts that failed without reporting usage may have been billed (see `ModelTurn.unreported`). */
  unreportedTokens: z.number().int().min(0).optional(),
  unreportedCost: z.number().min(0).optional(),
  /**
   * Set on a fork's first checkpoint (machines/persistence/log/fork.ts), gone once a step answers (a
   * reply, a summary, a batch of tool calls): the model call or summary a fork restored at its fork
   * point asks for again was the original run's, made and counted there, so it is not counted here as
   * one the saved run may have made (llm-step.ts, compaction.ts).
   */
  forkPoint: z.literal(true).optional(),
});
export type SpendState = z.infer<typeof SpendStateSchema>;
