import { z } from "zod";

/**
 * What a model client is told about the API it speaks and the model it reaches, for the client
 * itself and each fallback: which of the `openai` SDK's two APIs (`chat` = Chat Completions, the
 * default; `responses` = the Responses API, which keeps a reasoning model's reasoning across tool
 * calls), and a reasoning model's settings.
 */
export const ModelApiSchema = z.enum(["chat", "responses"], { error: 'must be "chat" (Chat Completions) or "responses" (the Responses API)' });
export type ModelApi = z.infer<typeof ModelApiSchema>;

/**
 * How much a reasoning model reasons and whether it summarizes its reasoning. Only for models that
 * reason: the Responses API then also asks for the reasoning's encrypted content (when nothing is
 * stored), which a model without reasoning refuses with HTTP 400.
 */
export const ReasoningOptionsSchema = z
  .object({
    /** `reasoning.effort` (Responses) or `reasoning_effort` (Chat Completions). */
    effort: z.enum(["none", "minimal", "low", "medium", "high", "xhigh"], { error: 'must be one of "none", "minimal", "low", "medium", "high", "xhigh"' }).optional(),
    /** Responses only: a summary of the reasoning, streamed as `reasoning.delta` events. */
    summary: z.enum(["auto", "concise", "detailed"], { error: 'must be "auto", "concise" or "detailed"' }).optional(),
  })
  .strict();
export type ReasoningOptions = z.infer<typeof ReasoningOptionsSchema>;

/** The settings a fallback may give for itself (and the client for its primary endpoint). */
export const modelApiFields = () => ({
  /** Which API to speak: "chat" (default) or "responses". A fallback keeps the client's unless it says. */
  api: ModelApiSchema.optional(),
  /** A reasoning model's settings (see ReasoningOptionsSchema). A fallback with a model of its own does not inherit them. */
  reasoning: ReasoningOptionsSchema.optional(),
  /** Responses only: let the server store the response (default false: the conversation is sent whole every round). */
  store: z.boolean({ error: "must be true or false" }).optional(),
});
