import { z } from "zod";

/**
 * A reasoning model's reasoning, as the Responses API hands it out: opaque items (`rs_…`) that the
 * model reads back on the next request to keep its chain of thought across tool calls. They live on
 * the assistant message they came with, so they are checkpointed and restored with the conversation.
 * Only the endpoint and model that wrote them can read them (the content is encrypted for that
 * account and model), so they carry where they came from, and every other model is sent the
 * conversation without them.
 */
export const ReasoningItemSchema = z.object({
  /** The server's id of the item (`rs_…`). */
  id: z.string().min(1),
  /** The summary parts, as the server wrote them (empty when no summary was asked for). */
  summary: z.array(z.string()),
  /** The reasoning itself, encrypted by the server: present when asked for (`include: ["reasoning.encrypted_content"]`). */
  encryptedContent: z.string().min(1).optional(),
  /** Raw reasoning text, from servers that hand it out (open-weight models served with the Responses API). */
  content: z.array(z.string()).optional(),
  /**
   * What an AI SDK provider attached to the reasoning (Anthropic's `signature` or `redactedData`,
   * keyed by provider), handed back as the reasoning part's provider options (`jianmu/ai-sdk`).
   */
  providerMetadata: z.record(z.string(), z.record(z.string(), z.unknown())).optional(),
  /**
   * How many of the reply's answer items (its text, then each function call) came before this one
   * in the server's output, so the items go back in the order the model wrote them.
   */
  after: z.number().int().min(0),
});
export type ReasoningItem = z.infer<typeof ReasoningItemSchema>;

export const ReasoningItemsSchema = z.object({
  /** The API that produced them (`ai-sdk`: a `fromAiSdk` client); only a request to the same API can carry them. */
  api: z.enum(["responses", "ai-sdk"]),
  /** The endpoint (base URL without credentials) that wrote them. */
  endpoint: z.string().min(1),
  /** The model they were written by, as requested (the fallback's, when a fallback answered). */
  model: z.string().min(1),
  items: z.array(ReasoningItemSchema).min(1),
});
export type ReasoningItems = z.infer<typeof ReasoningItemsSchema>;

/** True when a request to `endpoint` for `model` over `api` may carry these items. */
export function readableBy(reasoning: ReasoningItems, endpoint: string, model: string, api: ReasoningItems["api"] = "responses"): boolean {
  return reasoning.api === api && reasoning.endpoint === endpoint && reasoning.model === model;
}
