import { z } from "zod";
import { UserMessageSchema, type ContentPart, type Message, type UserMessage } from "../../actors/messages.js";
import type { RunCommand } from "../protocol.js";
import { readJsonBody } from "./body.js";
import { HttpError } from "./errors.js";
import type { LiveRun } from "./live-run.js";
import type { FoundRun } from "./run-registry.js";
import { SSE_HEADERS } from "./sse.js";
import { UIChunkTranslator, type UIChunk } from "./ui-message-chunks.js";

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

/** What the route needs from the handler: its runs, and its checked ways to start and command them. */
export interface ChatRuns {
  /** Start a run of `agent` from these messages, checked as `POST /runs` checks them. */
  start(agent: string, messages: Message[]): Promise<LiveRun>;
  /** A run by id, live or stored; undefined when there is none. */
  find(runId: string): Promise<FoundRun | undefined>;
  /** Approve or reject a waiting call, checked as `POST /runs/:id/events` checks it. */
  command(run: LiveRun, command: RunCommand): void;
}

export interface ChatRouteOptions {
  runs: ChatRuns;
  maxBodyBytes: number;
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
type ApprovalAnswer = z.infer<typeof ApprovalAnswerSchema>;

/** `POST /agents/:name/chat` (or `handler.aiSdk(name)`): one turn of a `useChat` conversation. */
export async function chatResponse(request: Request, agent: string, options: ChatRouteOptions): Promise<Response> {
  const { messages } = await readJsonBody(request, ChatRequestSchema, options.maxBodyBytes);
  const lastAssistant = messages.findLastIndex((message) => message.role === "assistant");
  const after = messages.slice(lastAssistant + 1);
  if (after.length === 0) return answerApprovals(messages[lastAssistant]!, lastAssistant, agent, options);

  const userTurns = after.map((message, i) => userMessageOf(message, lastAssistant + 1 + i));
  const earlier = lastAssistant < 0 ? [] : await conversationOf(messages[lastAssistant]!.id, agent, options.runs);
  const input = [...earlier, ...userTurns];
  const run = await options.runs.start(agent, input);
  const translator = new UIChunkTranslator({ runId: run.runId, inputMessages: input.length });
  return uiMessageStream(run, 0, translator, agent, options.heartbeatMs);
}

/** The conversation a run holds, to go on from with the next user turn. */
async function conversationOf(runId: string, agent: string, runs: ChatRuns): Promise<Message[]> {
  const found = await runOf(runId, agent, runs);
  const view = found.kind === "live" ? found.run.view() : found.view;
  if (view.status === "awaitingApproval") {
    const calls = view.pendingApprovals.map((call) => call.callId).join(", ");
    throw new HttpError(409, "run_active", `run ${runId} waits for approval of ${calls}; answer it (addToolApprovalResponse) before sending a new message`, "messages");
  }
  if (view.status === "running") throw new HttpError(409, "run_active", `run ${runId} is still running; wait for its answer before sending a new message`, "messages");
  return view.messages;
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
  const found = await runOf(message.id, agent, options.runs);
  if (found.kind === "stored" || !found.run.active) {
    const status = found.kind === "stored" ? found.view.status : found.run.view().status;
    throw new HttpError(409, "run_finished", `run ${message.id} has finished (${status}); it takes no more approvals`);
  }
  const run = found.run;
  const view = run.view();
  checkAnswers(answers, view.pendingApprovals.map((call) => call.callId), run.runId);
  const from = run.log.all().length;
  for (const answer of answers) options.runs.command(run, commandOf(answer));
  const translator = new UIChunkTranslator({ runId: run.runId, inputMessages: view.messages.length, answeredApprovals: answers.map((a) => a.toolCallId) });
  return uiMessageStream(run, from, translator, agent, options.heartbeatMs);
}

/** Every answer names a waiting call, or none is applied. */
function checkAnswers(answers: readonly ApprovalAnswer[], pending: readonly string[], runId: string): void {
  for (const answer of answers) {
    if (answer.approval.id !== answer.toolCallId) {
      throw new HttpError(400, "invalid_body", `approval ${JSON.stringify(answer.approval.id)} does not belong to call ${JSON.stringify(answer.toolCallId)}`, "approval.id");
    }
    if (!pending.includes(answer.toolCallId)) {
      const waiting = pending.length > 0 ? `it waits for ${pending.join(", ")}` : "it waits for no approval";
      throw new HttpError(409, "not_pending", `call ${JSON.stringify(answer.toolCallId)} of run ${runId} is not waiting for approval; ${waiting}`, "toolCallId");
    }
  }
}

function commandOf(answer: ApprovalAnswer): RunCommand {
  if (answer.approval.approved) return { type: "guard.approve", callId: answer.toolCallId };
  return { type: "guard.reject", callId: answer.toolCallId, ...(answer.approval.reason !== undefined ? { reason: answer.approval.reason } : {}) };
}

async function runOf(runId: string, agent: string, runs: ChatRuns): Promise<FoundRun> {
  const found = await runs.find(runId);
  const owner = found?.kind === "live" ? found.run.agent : found?.view.agent;
  if (!found || owner !== agent) {
    throw new HttpError(404, "unknown_run", `the conversation goes on from assistant message ${JSON.stringify(runId)}, which is no run of ${JSON.stringify(agent)} here (its id is the run's id; was the chat started on another server, or its checkpoint deleted?)`, "messages");
  }
  return found;
}

/** A user turn as jianmu holds it: text, or text and files (images by their media type). */
function userMessageOf(message: UIMessageBody, index: number): UserMessage {
  const field = `messages.${index}`;
  if (message.role !== "user") {
    throw new HttpError(400, "invalid_body", `${field}: after the assistant's last message a page may send only user messages (got ${message.role}); instructions belong to the server's agent`, `${field}.role`);
  }
  const parts: ContentPart[] = message.parts.map((part, j) => {
    const parsed = UserPartSchema.safeParse(part);
    if (!parsed.success) throw new HttpError(400, "invalid_body", `${field}.parts.${j}: a user message holds text and file parts (got ${JSON.stringify(part.type)})`, `${field}.parts.${j}`);
    const p = parsed.data;
    if (p.type === "text") return { type: "text", text: p.text };
    if (p.mediaType.startsWith("image/")) return { type: "image", url: p.url, mediaType: p.mediaType };
    return { type: "file", url: p.url, mediaType: p.mediaType, ...(p.filename !== undefined ? { filename: p.filename } : {}) };
  });
  const content = parts.every((part) => part.type === "text") ? parts.map((part) => part.text).join("\n") : parts;
  const checked = UserMessageSchema.safeParse({ role: "user", content });
  if (!checked.success || content === "") {
    const issue = checked.error?.issues[0];
    throw new HttpError(400, "invalid_body", `${field}.parts: ${issue ? issue.message : "the message is empty"}`, `${field}.parts`);
  }
  return checked.data;
}

export const UI_MESSAGE_STREAM_HEADERS = { ...SSE_HEADERS, "x-vercel-ai-ui-message-stream": "v1" } as const;

/**
 * The run's events from `from` on, as a UI message stream (`data: <chunk>` lines, `data: [DONE]`
 * at the end), until the message ends: the run finished, or parked for approval. A page that hangs
 * up only stops following; the run goes on.
 */
function uiMessageStream(run: LiveRun, from: number, translator: UIChunkTranslator, agent: string, heartbeatMs: number): Response {
  const encoder = new TextEncoder();
  let heartbeat: ReturnType<typeof setInterval> | undefined;
  let unfollow = (): void => undefined;
  const release = () => {
    clearInterval(heartbeat);
    unfollow();
  };
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      let open = true;
      const write = (chunks: readonly UIChunk[]) => {
        if (!open) return;
        for (const chunk of chunks) controller.enqueue(encoder.encode(`data: ${JSON.stringify(chunk)}\n\n`));
        if (!translator.ended) return;
        open = false;
        release();
        controller.enqueue(encoder.encode("data: [DONE]\n\n"));
        controller.close();
      };
      write([{ type: "start", messageId: run.runId, messageMetadata: { runId: run.runId, agent } }]);
      for (const event of run.log.all().slice(from)) write(translator.translate(event));
      // Answers to only some of the waiting calls leave the run waiting: nothing more comes until the rest.
      if (run.view().status === "awaitingApproval") write(translator.finish([], "tool-calls"));
      if (!open) return;
      heartbeat = setInterval(() => controller.enqueue(encoder.encode(": keep-alive\n\n")), heartbeatMs);
      (heartbeat as { unref?: () => void }).unref?.();
      unfollow = run.log.follow(
        (event) => write(translator.translate(event)),
        // The log closed without the run's end (the server let the run go): end the message.
        () => write(translator.finish([], "other")),
      );
    },
    cancel() {
      release();
    },
  });
  return new Response(body, { status: 200, headers: { ...UI_MESSAGE_STREAM_HEADERS, "x-run-id": run.runId } });
}
