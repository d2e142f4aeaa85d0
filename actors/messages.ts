import { z } from "zod";
import { ReasoningItemsSchema } from "./reasoning-items.js";

/**
 * One tool call as the model asked for it. `arguments` stays the raw JSON text the model
 * produced: it is sent back verbatim in the history, and parsing it is the tool executor's
 * job (so that malformed JSON becomes an observation instead of a crash).
 */
export const ToolCallSchema = z.object({
  id: z.string().min(1),
  name: z.string(),
  arguments: z.string(),
});
export type ToolCall = z.infer<typeof ToolCallSchema>;

export const SystemMessageSchema = z.object({ role: z.literal("system"), content: z.string() });
export const UserMessageSchema = z.object({ role: z.literal("user"), content: z.string() });
export const AssistantMessageSchema = z.object({
  role: z.literal("assistant"),
  content: z.string().nullable(),
  toolCalls: z.array(ToolCallSchema).optional(),
  /** A reasoning model's reasoning items, sent back only to the endpoint and model that wrote them (reasoning-items.ts). */
  reasoningItems: ReasoningItemsSchema.optional(),
});
export const ToolMessageSchema = z.object({
  role: z.literal("tool"),
  toolCallId: z.string().min(1),
  name: z.string().optional(),
  content: z.string(),
  isError: z.boolean().optional(),
});

export const MessageSchema = z.discriminatedUnion("role", [
  SystemMessageSchema,
  UserMessageSchema,
  AssistantMessageSchema,
  ToolMessageSchema,
]);

export type SystemMessage = z.infer<typeof SystemMessageSchema>;
export type UserMessage = z.infer<typeof UserMessageSchema>;
export type AssistantMessage = z.infer<typeof AssistantMessageSchema>;
export type ToolMessage = z.infer<typeof ToolMessageSchema>;
export type Message = z.infer<typeof MessageSchema>;

/** A user turn. */
export function human(content: string): UserMessage {
  return { role: "user", content };
}

/** An assistant turn, optionally asking for tool calls. */
export function ai(content: string | null, toolCalls?: ToolCall[]): AssistantMessage {
  return toolCalls && toolCalls.length > 0 ? { role: "assistant", content, toolCalls } : { role: "assistant", content };
}

/** A system instruction. */
export function system(content: string): SystemMessage {
  return { role: "system", content };
}

/** The observation for one tool call. */
export function toolMessage(
  toolCallId: string,
  content: string,
  options: { name?: string; isError?: boolean } = {},
): ToolMessage {
  const message: ToolMessage = { role: "tool", toolCallId, content };
  if (options.name !== undefined) message.name = options.name;
  if (options.isError) message.isError = true;
  return message;
}

/** The observation given to a tool call that never got one (its run was cancelled or crashed mid-batch). */
export const UNANSWERED_CALL = "Not executed: the run stopped before this call ran, so it has no result.";

/**
 * Chat APIs reject a history in which an assistant's tool call has no tool message (OpenAI: HTTP 400).
 * A run cancelled mid-batch leaves exactly that behind; continuing the conversation must still work,
 * so each unanswered call gets an explicit observation right after the other answers of its turn.
 */
export function answerDanglingCalls(messages: readonly Message[]): Message[] {
  // Called before every model request: check first, without allocating, and copy only when needed.
  if (!hasDanglingCalls(messages)) return messages as Message[];
  const answered = new Set(messages.flatMap((m) => (m.role === "tool" ? [m.toolCallId] : [])));
  const out: Message[] = [];
  let pending: ToolCall[] = [];
  const flush = () => {
    for (const call of pending) if (!answered.has(call.id)) out.push(toolMessage(call.id, UNANSWERED_CALL, { name: call.name, isError: true }));
    pending = [];
  };
  for (const message of messages) {
    if (message.role !== "tool") flush();
    out.push(message);
    if (message.role === "assistant" && message.toolCalls) pending = message.toolCalls;
  }
  flush();
  return out;
}

/** Whether some assistant tool call has no tool message anywhere after it. */
function hasDanglingCalls(messages: readonly Message[]): boolean {
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]!;
    if (message.role !== "assistant" || !message.toolCalls) continue;
    for (const call of message.toolCalls) if (!answeredAfter(messages, i, call.id)) return true;
  }
  return false;
}

function answeredAfter(messages: readonly Message[], index: number, callId: string): boolean {
  for (let j = index + 1; j < messages.length; j++) {
    const message = messages[j]!;
    if (message.role === "tool" && message.toolCallId === callId) return true;
  }
  return false;
}
