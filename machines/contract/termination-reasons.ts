// A module of its own, importing nothing: the browser-safe web protocol (web/protocol.ts) reads it too.

/** Why a failed run ended. The one list: types, schemas and checks derive from it. */
export const TERMINATION_REASONS = [
  "maxIterations",
  "tokenBudget",
  "modelError",
  "cancelled",
  "approvalTimeout",
  "toolProviderError",
  "internalError",
  "handoffFailed",
  "invalidOutput",
  "costBudget",
  "guardrailTripped",
  "deadline",
] as const;
export type TerminationReason = (typeof TERMINATION_REASONS)[number];
