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

/*
 * Content parts: what a user turn or a tool result may carry besides text (docs/content-parts.md).
 * Audio is a `file` whose media type is audio/*, as in the AI SDK, so the part names stay three.
 * Each image or file names its content in exactly one way: `url`, `data` (base64) or `blob` (a
 * reference to content stored once per run by its SHA-256: what checkpoints keep instead of large
 * `data`, machines/persistence/blobs.ts).
 */

/** A stored blob's reference: `sha256:` and the 64 lowercase hex digits of the content's SHA-256. */
export const BLOB_REF_PATTERN = /^sha256:[0-9a-f]{64}$/;

const mediaSourceFields = {
  /** An http(s) URL the model's server fetches, or a `data:` URL. */
  url: z.string().optional(),
  /** The content itself as base64 (no `data:` prefix); `mediaType` says what it is. */
  data: z.string().optional(),
  /** Content a checkpoint keeps once per run (see `BLOB_REF_PATTERN`); `loadCheckpoint` puts the bytes back as `data`. */
  blob: z.string().regex(BLOB_REF_PATTERN, { error: "must be sha256: and 64 lowercase hex digits (a stored blob's reference)" }).optional(),
  /** The IANA media type: image/png, application/pdf, audio/wav, ... */
  mediaType: z.string().min(1, { error: "must be a media type such as image/png" }).optional(),
};

/** Exactly one source, and a media type wherever the bytes come without one. */
function checkMediaSource(part: { url?: string | undefined; data?: string | undefined; blob?: string | undefined; mediaType?: string | undefined }, context: z.core.$RefinementCtx): void {
  const given = (["url", "data", "blob"] as const).filter((key) => part[key] !== undefined);
  if (given.length !== 1) {
    context.addIssue({
      code: "custom",
      path: given.length === 0 ? ["url"] : [given[1]!],
      message: given.length === 0 ? "give the content as url, or as data (base64) with mediaType" : `give one of url, data and blob, not ${given.join(" and ")}`,
    });
    return;
  }
  if (part.url !== undefined && !/^(https?:|data:)/i.test(part.url)) {
    context.addIssue({ code: "custom", path: ["url"], message: "must be an http(s) or data: URL; for bytes you hold, pass data (base64) with mediaType" });
  }
  if (part.data !== undefined && /^data:/i.test(part.data)) {
    context.addIssue({ code: "custom", path: ["data"], message: "must be the base64 text alone: pass a data: URL as url instead" });
  }
  if (part.url === undefined && part.mediaType === undefined) {
    context.addIssue({ code: "custom", path: ["mediaType"], message: "is needed with data or blob (e.g. image/png, application/pdf, audio/wav)" });
  }
}

export const TextPartSchema = z.object({ type: z.literal("text"), text: z.string() }).strict();
export const ImagePartSchema = z
  .object({
    type: z.literal("image"),
    ...mediaSourceFields,
    /** OpenAI's image detail level; other servers ignore it. */
    detail: z.enum(["auto", "low", "high"]).optional(),
  })
  .strict()
  .superRefine(checkMediaSource);
/** A document (PDF, ...) or audio (`mediaType` audio/*). */
export const FilePartSchema = z
  .object({
    type: z.literal("file"),
    ...mediaSourceFields,
    mediaType: z.string({ error: "must be a media type such as application/pdf or audio/wav" }).min(1, { error: "must be a media type such as application/pdf or audio/wav" }),
    filename: z.string().optional(),
  })
  .strict()
  .superRefine(checkMediaSource);
export const ContentPartSchema = z.discriminatedUnion("type", [TextPartSchema, ImagePartSchema, FilePartSchema]);
/**
 * A user turn's or a tool result's content: text, or parts (at least one). When parts are given
 * and one is malformed, zod's union would only say "Invalid input"; the error names the part's
 * field instead (`[1].mediaType: ...`).
 */
export const PartsContentSchema = z.union([z.string(), z.array(ContentPartSchema).min(1, { error: "needs at least one part; for text alone pass a string" })], {
  error: (issue) => {
    if (issue.code !== "invalid_union" || !Array.isArray(issue.input)) return "must be a string or an array of content parts";
    const first = issue.errors[1]?.[0];
    if (first === undefined) return undefined;
    return `${first.path.map((key) => (typeof key === "number" ? `[${key}]` : `.${String(key)}`)).join("")}: ${first.message}`;
  },
});
export type TextPart = z.infer<typeof TextPartSchema>;
export type ImagePart = z.infer<typeof ImagePartSchema>;
export type FilePart = z.infer<typeof FilePartSchema>;
export type ContentPart = z.infer<typeof ContentPartSchema>;
export type MediaPart = ImagePart | FilePart;
export type PartsContent = z.infer<typeof PartsContentSchema>;

export const SystemMessageSchema = z.object({ role: z.literal("system"), content: z.string() });
export const UserMessageSchema = z.object({ role: z.literal("user"), content: PartsContentSchema });
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
  content: PartsContentSchema,
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

/** A user turn: text, or parts (text, images, files). */
export function human(content: PartsContent): UserMessage {
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
  content: PartsContent,
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
