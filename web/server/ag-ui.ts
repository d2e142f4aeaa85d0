import { z } from "zod";
import type { ContentPart, UserMessage } from "../../actors/messages.js";
import { readJsonBody } from "./body.js";
import { answerCalls, conversationOf, requireUserRole, userTurnOf, type CallAnswer, type ChatRuns, type ChatStream } from "./chat-runs.js";
import { AgUiTranslator, callIdOf, runIdOf, type AgUiEvent } from "./ag-ui-events.js";
import { HttpError } from "./errors.js";
import { translatedStream } from "./translated-stream.js";

/**
 * AG-UI (protocol 1.0) on top of the handler's runs: `POST /agents/:name/ag-ui` takes a
 * `RunAgentInput` and streams the run's events, so an AG-UI client (`@ag-ui/client`'s `HttpAgent`,
 * CopilotKit) drives a jianmu agent. As with `useChat`, the page's history is not trusted: the
 * last message this server wrote (its id names the run) is where the conversation goes on from,
 * and only user messages after it are new. A waiting call is an interrupt; the next request's
 * `resume` entries answer it (`{ approved, editedArgs?, reason? }`).
 */

export interface AgUiRouteOptions {
  runs: ChatRuns;
  maxBodyBytes: number;
  /** A body must arrive within this long (408 otherwise). */
  bodyTimeoutMs: number;
  heartbeatMs: number;
}

const AgUiMessageSchema = z.looseObject({ id: z.string(), role: z.string(), content: z.unknown().optional() });
const ResumeEntrySchema = z.looseObject({ interruptId: z.string(), status: z.enum(["resolved", "cancelled"]), payload: z.unknown().optional() });
const ApprovalPayloadSchema = z.object({
  approved: z.boolean(),
  editedArgs: z.record(z.string(), z.unknown()).optional(),
  reason: z.string().max(2_000).optional(),
});
/** `RunAgentInput`: what is read from it. `context`, `state` and `forwardedProps` are the page's and are not passed to the agent. */
const RunAgentInputSchema = z.looseObject({
  threadId: z.string().min(1),
  runId: z.string().min(1),
  messages: z.array(AgUiMessageSchema),
  tools: z.array(z.unknown()).max(0, "frontend tools are not served: the agent's tools are the server's").optional(),
  resume: z.array(ResumeEntrySchema).optional(),
});
type AgUiMessage = z.infer<typeof AgUiMessageSchema>;

const AgUiPartSchema = z.discriminatedUnion("type", [
  z.looseObject({ type: z.literal("text"), text: z.string() }),
  z.looseObject({
    type: z.literal("image"),
    source: z.discriminatedUnion("type", [z.looseObject({ type: z.literal("url"), value: z.string(), mimeType: z.string().optional() }), z.looseObject({ type: z.literal("data"), value: z.string(), mimeType: z.string() })]),
  }),
]);

/** `POST /agents/:name/ag-ui`: one AG-UI run. */
export async function agUiResponse(request: Request, agent: string, options: AgUiRouteOptions): Promise<Response> {
  const input = await readJsonBody(request, RunAgentInputSchema, options.maxBodyBytes, options.bodyTimeoutMs);
  const agUi = { threadId: input.threadId, runId: input.runId };
  if (input.resume && input.resume.length > 0) {
    const { runId, answers } = answersOf(input.resume);
    const { stream, inputMessages, announced } = await answerCalls(runId, answers, agent, options.runs, "resume");
    return agUiStream(stream, new AgUiTranslator({ runId: stream.runId, agUi, inputMessages, announced, pendingApprovals: () => stream.pendingApprovals() }), agUi, options.heartbeatMs);
  }
  const lastOurs = input.messages.findLastIndex((message) => runIdOf(message.id) !== undefined);
  const userTurns = input.messages.slice(lastOurs + 1).map((message, i) => userMessageOf(message, lastOurs + 1 + i));
  if (userTurns.length === 0) throw new HttpError(400, "invalid_body", "messages: nothing new to answer; add a user message, or answer the run's interrupts with resume", "messages");
  const earlier = lastOurs < 0 ? [] : await conversationOf(runIdOf(input.messages[lastOurs]!.id)!, agent, options.runs, `messages.${lastOurs}`);
  const messages = [...earlier, ...userTurns];
  const run = await options.runs.start(agent, messages);
  return agUiStream(run, new AgUiTranslator({ runId: run.runId, agUi, inputMessages: messages.length, pendingApprovals: () => run.pendingApprovals() }), agUi, options.heartbeatMs);
}

/** The resume entries as answers to one run's waiting calls. */
function answersOf(resume: readonly z.infer<typeof ResumeEntrySchema>[]): { runId: string; answers: CallAnswer[] } {
  const runIds = new Set(resume.map((entry) => runIdOf(entry.interruptId)));
  const [runId] = runIds;
  if (runIds.size !== 1 || runId === undefined) {
    throw new HttpError(400, "invalid_body", `resume: every entry must answer an interrupt of the one run that ended with them (got ${resume.map((entry) => JSON.stringify(entry.interruptId)).join(", ")})`, "resume");
  }
  const answers = resume.map((entry, i): CallAnswer => {
    const callId = callIdOf(entry.interruptId)!;
    if (entry.status === "cancelled") return { callId, approved: false, reason: "the person dismissed the approval" };
    const payload = ApprovalPayloadSchema.safeParse(entry.payload);
    if (!payload.success) {
      const issue = payload.error.issues[0]!;
      throw new HttpError(400, "invalid_body", `resume.${i}.payload${issue.path.length > 0 ? `.${issue.path.join(".")}` : ""}: ${issue.message} (a tool approval's answer is { approved, editedArgs?, reason? })`, `resume.${i}.payload`);
    }
    return { callId, approved: payload.data.approved, reason: payload.data.reason, args: payload.data.editedArgs };
  });
  return { runId, answers };
}

/** A user turn from an AG-UI message: text, or text and images. */
function userMessageOf(message: AgUiMessage, index: number): UserMessage {
  const field = `messages.${index}`;
  requireUserRole(message.role, field);
  if (typeof message.content === "string") return userTurnOf([{ type: "text", text: message.content }], `${field}.content`);
  const parts = (Array.isArray(message.content) ? message.content : []).map((part: unknown, j): ContentPart => {
    const parsed = AgUiPartSchema.safeParse(part);
    if (!parsed.success) throw new HttpError(400, "invalid_body", `${field}.content.${j}: a user message holds text and image parts`, `${field}.content.${j}`);
    const p = parsed.data;
    if (p.type === "text") return { type: "text", text: p.text };
    return p.source.type === "url" ? { type: "image", url: p.source.value, ...(p.source.mimeType ? { mediaType: p.source.mimeType } : {}) } : { type: "image", data: p.source.value, mediaType: p.source.mimeType };
  });
  return userTurnOf(parts, `${field}.content`);
}

function agUiStream(run: ChatStream, translator: AgUiTranslator, agUi: { threadId: string; runId: string }, heartbeatMs: number): Response {
  const head: AgUiEvent[] = [{ type: "RUN_STARTED", ...agUi }];
  return translatedStream({ run, translator, head, heartbeatMs, headers: {} });
}
