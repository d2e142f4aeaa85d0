/** Built-in guards for `createReactMachine({ constraints: [...] })`. */
export { allowTools, denyTools, type ToolListOptions } from "./tool-lists.js";
export { requireApproval, type RequireApprovalOptions } from "./approval.js";
export { callBudget, type CallBudgetOptions } from "./budget.js";
export { rateLimit, type RateLimitOptions } from "./rate-limit.js";
export { GuardOptionsError } from "./options.js";
