/*
 * What a model call runs once it is under way, for each API (Chat Completions, Responses): the
 * request body, the HTTP attempt, reading and merging the reply (with the wire schemas behind them). `openai-sdk.ts` loads this together with
 * the `openai` SDK on the first call, so `import "jianmu"` loads neither.
 */
export { attemptCompletion } from "./openai-attempt.js";
export { attemptResponse } from "./responses-attempt.js";
export { buildRequestBody } from "./openai-wire.js";
export { buildResponsesBody } from "./responses-wire.js";
