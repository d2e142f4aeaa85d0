import { z } from "zod";
import type { ContentPart, UserMessage } from "../../actors/messages.js";
import { readJsonBody } from "./body.js";
import { answerCalls, conversationOf, requireUserRole, userTurnOf, type ChatRuns, type ChatStream } from "./chat-runs.js";
import { HttpError } from "./errors.js";
import { translatedStream } from "./translated-stream.js";
import { UIChunkTranslator } from "./ui-message-chunks.js";

/**
 * The AI SDK's chat protocol on top of the handler's runs, so `useChat` (its default transport,
 * `DefaultChatTransport`) drives a jianmu agent. Each request carries the whole conversation as
 * UI messages; the server trusts only what it holds itself:
 *
 * - The id of the last assistant message is the id of the run that wrote it. A new user turn
 *   starts a run from that run's own conversation plus the user messages after it, so a page cannot
 *   forge earlier turns, tool calls, results or instructions.
 * - A request whose last message is that assistant message with approval answers
 *   (`addToolApprovalResponse`) approves or rejects the run's waiting calls, and the answer streams
 *   on in the same message.
 */

export interface ChatRouteOptions {
  runs: ChatRuns;
  maxBodyBytes: number;
  /** A body must arrive within this long (408 otherwise). */
  bodyTimeoutMs: number;
  heartbeatMs: number;
}

const UIMessageSchema = z.looseObject({
  id: z.string(),
  role: z.enum(["system", "user", "assistant"]),
  parts: z.array(z.looseObject({ type: z.string() })),
});
/** The body `DefaultChatTransport` posts: `{ id, messages, trigger, messageId, ...body }`; only `messages` matters here. */
const ChatRequestSchema = z.looseObject({ messages: z.array(UIMessageSchema).min(1, "must hold the conversation (useChat sends it)") });
type UIMessageBody = z.infer<typeof UIMessageSchema>;

const UserPartSchema = z.discriminatedUnion("type", [
  z.looseObject({ type: z.literal("text"), text: z.string() }),
  z.looseObject({ type: z.literal("file"), mediaType: z.string(), url: z.string(), filename: z.string().optional() }),
]);
/** A tool part the person answered: `addToolApprovalResponse({ id, approved, reason })`. */
const ApprovalAnswerSchema = z.looseObject({
  state: z.literal("approval-responded"),
  toolCallId: z.string(),
  approval: z.looseObject({ id: z.string(), approved: z.boolean(), reason: z.string().max(2_000).optional() }),
});

/** `POST /agents/:name/chat` (or `handler.aiSdk(name)`): one turn of a `useChat` conversation. */
export async function chatResponse(request: Request, agent: string, options: ChatRouteOptions): Promise<Response> {
  const { messages } = await readJsonBody(request, ChatRequestSchema, options.maxBodyBytes, options.bodyTimeoutMs);
  const lastAssistant = messages.findLastIndex((message) => message.role === "assistant");
  const after = messages.slice(lastAssistant + 1);
  if (after.length === 0) return answerApprovals(messages[lastAssistant]!, lastAssistant, agent, options);

  const userTurns = after.map((message, i) => userMessageOf(message, lastAssistant + 1 + i));
  const earlier = lastAssistant < 0 ? [] : await conversationOf(messages[lastAssistant]!.id, agent, options.runs, `assistant message ${lastAssistant}`);
  const input = [...earlier, ...userTurns];
  const run = await options.runs.start(agent, input);
  return uiMessageStream(run, new UIChunkTranslator({ runId: run.runId, inputMessages: input.length }), agent, options.heartbeatMs);
}

/** The last message is the run's own, with the person's answers to its waiting calls: apply them and stream on. */
async function answerApprovals(message: UIMessageBody, index: number, agent: string, options: ChatRouteOptions): Promise<Response> {
  const answers = message.parts.flatMap((part) => {
    const answer = ApprovalAnswerSchema.safeParse(part);
    return answer.success ? [answer.data] : [];
  });
  if (answers.length === 0) {
    throw new HttpError(400, "invalid_body", `messages.${index}: the conversation ends with the assistant's message and answers none of its approvals; send a user message, or answer with addToolApprovalResponse`, `messages.${index}`);
  }
  for (const answer of answers) {
    if (answer.approval.id !== answer.toolCallId) {
      throw new HttpError(400, "invalid_body", `approval ${JSON.stringify(answer.approval.id)} does not belong to call ${JSON.stringify(answer.toolCallId)}`, "approval.id");
    }
  }
  const calls = answers.map((answer) => ({ callId: answer.toolCallId, approved: answer.approval.approved, reason: answer.approval.reason }));
  const { stream, inputMessages, announced } = await answerCalls(message.id, calls, agent, options.runs, `assistant message ${index}`);
  const translator = new UIChunkTranslator({ runId: stream.runId, inputMessages, announced, answeredApprovals: calls.map((call) => call.callId) });
  return uiMessageStream(stream, translator, agent, options.heartbeatMs);
}

/** A user turn as jianmu holds it: text, or text and files (images by their media type). */
function userMessageOf(message: UIMessageBody, index: number): UserMessage {
  const field = `messages.${index}`;
  requireUserRole(message.role, field);
  const parts = message.parts.map((part, j): ContentPart => {
    const parsed = UserPartSchema.safeParse(part);
    if (!parsed.success) throw new HttpError(400, "invalid_body", `${field}.parts.${j}: a user message holds text and file parts (got ${JSON.stringify(part.type)})`, `${field}.parts.${j}`);
    const p = parsed.data;
    if (p.type === "text") return { type: "text", text: p.text };
    if (p.mediaType.startsWith("image/")) return { type: "image", url: p.url, mediaType: p.mediaType };
    return { type: "file", url: p.url, mediaType: p.mediaType, ...(p.filename !== undefined ? { filename: p.filename } : {}) };
  });
  return userTurnOf(parts, `${field}.parts`);
}

/** The run's events, as the AI SDK's UI message stream (v1): one assistant message, the run's. */
function uiMessageStream(run: ChatStream, translator: UIChunkTranslator, agent: string, heartbeatMs: number): Response {
  return translatedStream({
    run,
    translator,
    head: [{ type: "start", messageId: run.runId, messageMetadata: { runId: run.runId, agent } }],
    tail: "data: [DONE]\n\n",
    heartbeatMs,
    headers: { "x-vercel-ai-ui-message-stream": "v1" },
  });
}
