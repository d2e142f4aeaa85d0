import { UserMessageSchema, type ContentPart, type Message, type UserMessage } from "../../actors/messages.js";
import type { PendingApproval } from "../../machines/contract/approvals.js";
import type { RunCommand, RunEvent, RunOutputView, RunSnapshot } from "../protocol.js";
import { HttpError } from "./errors.js";
import type { EventFeed } from "./stream-response.js";

/**
 * What the chat protocols of other frontends (the AI SDK's `useChat`, AG-UI) share: a page sends
 * the whole conversation, the server trusts only the runs it holds. A new turn goes on from the
 * conversation of the run the page names; answers to waiting calls are checked, then applied.
 */

/**
 * What a chat route needs from the handler: its runs, and its checked ways to start and answer them.
 * The handler makes one per request, so `start`, `view` and `answer` ask its `authorize` about that
 * request. Two kinds: runs held in this process (RunRegistry) and runs on a run queue (queue-chat-runs.ts).
 */
export interface ChatRuns {
  /** Start a run of `agent` from these messages, checked (and authorized) as `POST /runs` checks them; its events from the first. */
  start(agent: string, messages: Message[]): Promise<ChatStream>;
  /** A run's view by id, if the request may `read` it or `approve` its calls; undefined when there is none. */
  view(runId: string, action: "read" | "approve"): Promise<RunSnapshot | undefined>;
  /**
   * Send answers to calls the run (as `view` showed it) waits for, checked as `POST /runs/:id/events`
   * checks them (an edit the tool refuses is a 422); the events they set off.
   */
  answer(run: RunSnapshot, commands: readonly RunCommand[]): Promise<ChatStream>;
}

/** The events one chat response tells, wherever the run is held. */
export interface ChatStream {
  readonly runId: string;
  /** Events there already that the response tells first (read as it begins, then `feed` is followed at once). */
  backlog(): readonly RunEvent[];
  /** The run's next events, until it ends. */
  readonly feed: EventFeed;
  /** Whether the run waits for a person after the backlog (answers to only some of its calls): nothing follows until the rest. */
  waiting(): boolean;
  /** The calls the run waits for now: the interrupts an AG-UI response ends with. */
  pendingApprovals(): readonly PendingApproval[];
}

/** A person's answer to one waiting call. */
export interface CallAnswer {
  callId: string;
  approved: boolean;
  reason?: string | undefined;
  /** Edited arguments (AG-UI's `editedArgs`), checked against the tool's schema. */
  args?: Record<string, unknown> | undefined;
}

/** The run behind an id the page sent (a message's or an interrupt's), if it is one of this agent's. */
export async function chatRunOf(runId: string, agent: string, runs: ChatRuns, where: string, action: "read" | "approve"): Promise<RunSnapshot> {
  const view = await runs.view(runId, action);
  if (!view || view.agent !== agent) {
    throw new HttpError(404, "unknown_run", `${where} names run ${JSON.stringify(runId)}, which is no run of ${JSON.stringify(agent)} here (was the chat started on another server, or its checkpoint deleted?)`, "messages");
  }
  return view;
}

/** The conversation a finished run holds, to go on from with the next user turn. */
export async function conversationOf(runId: string, agent: string, runs: ChatRuns, where: string): Promise<Message[]> {
  const view = await chatRunOf(runId, agent, runs, where, "read");
  if (view.status === "awaitingApproval") {
    const calls = view.pendingApprovals.map((call) => call.callId).join(", ");
    throw new HttpError(409, "run_active", `run ${runId} waits for approval of ${calls}; answer it before sending a new message`, "messages");
  }
  if (view.status === "running") throw new HttpError(409, "run_active", `run ${runId} is still running; wait for its answer before sending a new message`, "messages");
  return view.messages;
}

/**
 * Apply a person's answers to a run's waiting calls: every answer must name a waiting call, or
 * none is applied. Returns the events the answers set off.
 */
export async function answerCalls(runId: string, answers: readonly CallAnswer[], agent: string, runs: ChatRuns, where: string): Promise<AnsweredRun> {
  const view = await chatRunOf(runId, agent, runs, where, "approve");
  if (view.status !== "running" && view.status !== "awaitingApproval") {
    throw new HttpError(409, "run_finished", `run ${runId} has finished (${view.status}); it takes no more approvals`);
  }
  const pending = view.pendingApprovals.map((call) => call.callId);
  for (const answer of answers) {
    if (!pending.includes(answer.callId)) {
      const waiting = pending.length > 0 ? `it waits for ${pending.join(", ")}` : "it waits for no approval";
      throw new HttpError(409, "not_pending", `call ${JSON.stringify(answer.callId)} of run ${runId} is not waiting for approval; ${waiting}`, "toolCallId");
    }
  }
  const stream = await runs.answer(view, answers.map(commandOf));
  const batch = view.messages.findLast((message) => message.role === "assistant");
  return { stream, inputMessages: view.messages.length, announced: batch?.role === "assistant" ? (batch.toolCalls ?? []).map((call) => call.id) : [] };
}

/** A run whose waiting calls were answered, and where its response goes on from. */
export interface AnsweredRun {
  /** What the answers set off (the run's earlier events are not in it). */
  stream: ChatStream;
  /** The conversation's length when the answers came: the page has every message before. */
  inputMessages: number;
  /** The calls of the batch that waited: the page heard of them in the response that ended there. */
  announced: string[];
}

function commandOf(answer: CallAnswer): RunCommand {
  if (answer.approved) return { type: "guard.approve", callId: answer.callId, ...(answer.args !== undefined ? { args: answer.args } : {}) };
  return { type: "guard.reject", callId: answer.callId, ...(answer.reason !== undefined ? { reason: answer.reason } : {}) };
}

/** Why a run failed, in one sentence (the chat protocols' error events). */
export function failureText(output: RunOutputView): string {
  const termination = output.termination;
  if (!termination) return `the run ended ${output.status}`;
  const why = termination.error?.message ?? termination.detail;
  return `the run failed (${termination.reason})${why ? `: ${why}` : ""}`;
}

/** A message a page sent as new: only a user's (instructions, tool calls and results are the server's agent's). */
export function requireUserRole(role: string, field: string): void {
  if (role !== "user") {
    throw new HttpError(400, "invalid_body", `${field}: after the last message this server wrote a page may send only user messages (got ${role}); instructions, tool calls and results belong to the server's agent`, `${field}.role`);
  }
}

/** A user turn from a page's parts (text alone becomes a string), checked as jianmu checks content. */
export function userTurnOf(parts: readonly ContentPart[], field: string): UserMessage {
  const content = parts.every((part) => part.type === "text") ? parts.map((part) => part.text).join("\n") : [...parts];
  const checked = UserMessageSchema.safeParse({ role: "user", content });
  if (!checked.success || content === "") {
    throw new HttpError(400, "invalid_body", `${field}: ${checked.error?.issues[0]?.message ?? "the message is empty"}`, field);
  }
  return checked.data;
}
