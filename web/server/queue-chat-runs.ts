import type { PendingApproval } from "../../machines/contract/approvals.js";
import type { RunEvent } from "../protocol.js";
import { authorized, checkInputLimits, type Authorize } from "./access.js";
import type { ChatRuns, ChatStream } from "./chat-runs.js";
import { HttpError } from "./errors.js";
import type { QueueRuns } from "./queue-runs.js";

/**
 * The chat routes' runs on a run queue, for one request: a start is a submit, a run's view is read
 * from the store, answers go to the run's inbox (edits checked first, queue-edits.ts), and a response
 * follows the run's stored events (StoreFollowers). Nothing is held in this process, so a chat started
 * on one replica is answered and continued on any other. `authorize` is asked as on `/runs`.
 */
export function queueChatRuns(request: Request, queue: QueueRuns, authorize: Authorize | undefined): ChatRuns {
  return {
    start: async (agent, messages) => {
      await authorized(authorize, { request, action: "start", agent });
      checkInputLimits({ messages });
      const runId = await queue.start(agent, { messages });
      return storedStream(queue, runId, 0, []);
    },
    view: async (runId, action) => {
      const agent = await queue.agentOf(runId).catch((error: unknown) => {
        // A page's id the store has no run for (or could not be one's): no run of this chat.
        if (error instanceof HttpError && (error.code === "unknown_run" || error.code === "invalid_body")) return undefined;
        throw error;
      });
      if (agent === undefined) return undefined;
      await authorized(authorize, { request, action, agent, runId });
      return queue.view(runId);
    },
    answer: async (run, commands) => {
      // Everything stored before the answers is what the page has heard (its last response ended with the run waiting).
      const from = await queue.lastEventSeq(run.runId);
      await queue.send(run.runId, commands);
      // The view is the run's last checkpoint: an earlier answer still in the inbox (its worker has not applied it) answered its call too.
      const answered = await queue.decidedInInbox(run.runId);
      const answeredNow = new Set(commands.flatMap((command) => (command.type === "agent.cancel" ? [] : [command.callId])));
      for (const callId of answeredNow) answered.add(callId);
      const answeredHere = run.pendingApprovals.filter((call) => answeredNow.has(call.callId));
      return storedStream(queue, run.runId, from, run.pendingApprovals.filter((call) => !answered.has(call.callId)), answeredHere);
    },
  };
}

/**
 * A run's stored events after `from`. The calls it waits for are known from its events (the store's
 * status may lag behind them): those still waiting when the response began, plus those it asks about
 * since, less those decided since. `answered`: the calls this request answered; one whose answer the
 * run refuses (an edit only the worker can check, of a tool provider's or a nested agent's call)
 * waits again, with the refusal as its reason, and the response ends with it (ag-ui-events.ts).
 */
function storedStream(queue: QueueRuns, runId: string, from: number, waiting: readonly PendingApproval[], answered: readonly PendingApproval[] = []): ChatStream {
  const pending = new Map(waiting.map((call) => [call.callId, call]));
  const refusable = new Map(answered.map((call) => [call.callId, call]));
  const stored = queue.follower(runId, String(from));
  return {
    runId,
    backlog: () => [],
    feed: {
      follow: (listener, onClose) =>
        stored.follow((event) => {
          noteApprovals(pending, refusable, event);
          listener(event);
        }, onClose),
    },
    waiting: () => waiting.length > 0,
    pendingApprovals: () => [...pending.values()],
  };
}

function noteApprovals(pending: Map<string, PendingApproval>, refusable: Map<string, PendingApproval>, event: RunEvent): void {
  switch (event.type) {
    case "approval.requested":
      pending.set(event.data.callId, event.data);
      break;
    case "approval.refused": {
      const call = refusable.get(event.data.callId);
      if (call) pending.set(call.callId, { ...call, reason: `your answer was not applied: ${event.data.reason}` });
      break;
    }
    case "approval.decided":
    case "tool.call.denied":
    case "tool.call.completed":
    case "tool.call.failed":
      refusable.delete(event.data.callId);
      pending.delete(event.data.callId);
      break;
    default:
      break;
  }
}
