import { UserMessageSchema, type ContentPart, type Message, type UserMessage } from "../../actors/messages.js";
import type { RunCommand, RunOutputView } from "../protocol.js";
import { HttpError } from "./errors.js";
import type { LiveRun } from "./live-run.js";
import type { FoundRun } from "./run-registry.js";

/**
 * What the chat protocols of other frontends (the AI SDK's `useChat`, AG-UI) share: a page sends
 * the whole conversation, the server trusts only the runs it holds. A new turn goes on from the
 * conversation of the run the page names; answers to waiting calls are checked, then applied.
 */

/**
 * What a chat route needs from the handler: its runs, and its checked ways to start and command them.
 * The handler makes one per request, so `start` and `find` ask its `authorize` about that request.
 */
export interface ChatRuns {
  /** Start a run of `agent` from these messages, checked (and authorized) as `POST /runs` checks them. */
  start(agent: string, messages: Message[]): Promise<LiveRun>;
  /** A run by id, live or stored, if the request may `read` it or `approve` its calls; undefined when there is none. */
  find(runId: string, action: "read" | "approve"): Promise<FoundRun | undefined>;
  /** Approve or reject a waiting call, checked as `POST /runs/:id/events` checks it. */
  command(run: LiveRun, command: RunCommand): void;
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
export async function chatRunOf(runId: string, agent: string, runs: ChatRuns, where: string, action: "read" | "approve"): Promise<FoundRun> {
  const found = await runs.find(runId, action);
  const owner = found?.kind === "live" ? found.run.agent : found?.view.agent;
  if (!found || owner !== agent) {
    throw new HttpError(404, "unknown_run", `${where} names run ${JSON.stringify(runId)}, which is no run of ${JSON.stringify(agent)} here (was the chat started on another server, or its checkpoint deleted?)`, "messages");
  }
  return found;
}

/** The conversation a finished run holds, to go on from with the next user turn. */
export async function conversationOf(runId: string, agent: string, runs: ChatRuns, where: string): Promise<Message[]> {
  const found = await chatRunOf(runId, agent, runs, where, "read");
  const view = found.kind === "live" ? found.run.view() : found.view;
  if (view.status === "awaitingApproval") {
    const calls = view.pendingApprovals.map((call) => call.callId).join(", ");
    throw new HttpError(409, "run_active", `run ${runId} waits for approval of ${calls}; answer it before sending a new message`, "messages");
  }
  if (view.status === "running") throw new HttpError(409, "run_active", `run ${runId} is still running; wait for its answer before sending a new message`, "messages");
  return view.messages;
}

/**
 * Apply a person's answers to a run's waiting calls: every answer must name a waiting call, or
 * none is applied. Returns where in the run's log the consequences start.
 */
export async function answerCalls(runId: string, answers: readonly CallAnswer[], agent: string, runs: ChatRuns, where: string): Promise<AnsweredRun> {
  const found = await chatRunOf(runId, agent, runs, where, "approve");
  if (found.kind === "stored" || !found.run.active) {
    const status = found.kind === "stored" ? found.view.status : found.run.view().status;
    throw new HttpError(409, "run_finished", `run ${runId} has finished (${status}); it takes no more approvals`);
  }
  const run = found.run;
  const view = run.view();
  const pending = view.pendingApprovals.map((call) => call.callId);
  for (const answer of answers) {
    if (!pending.includes(answer.callId)) {
      const waiting = pending.length > 0 ? `it waits for ${pending.join(", ")}` : "it waits for no approval";
      throw new HttpError(409, "not_pending", `call ${JSON.stringify(answer.callId)} of run ${runId} is not waiting for approval; ${waiting}`, "toolCallId");
    }
  }
  const from = run.log.all().length;
  for (const answer of answers) runs.command(run, commandOf(answer));
  const batch = view.messages.findLast((message) => message.role === "assistant");
  return { run, from, inputMessages: view.messages.length, announced: batch?.role === "assistant" ? (batch.toolCalls ?? []).map((call) => call.id) : [] };
}

/** A run whose waiting calls were answered, and where its response goes on from. */
export interface AnsweredRun {
  run: LiveRun;
  /** The first event of the run's log that is news: what the answers set off. */
  from: number;
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
