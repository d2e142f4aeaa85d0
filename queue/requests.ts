import { DEFAULT_INPUT_LIMITS, inputLimitProblem } from "../machines/persistence/snapshot-limits.js";
import { RunQueueError } from "./errors.js";
import {
  firstIssue,
  FINAL_STATUSES,
  ListOptionsSchema,
  RunCommandSchema,
  RunIdSchema,
  SubmitSchema,
  type ListOptions,
  type QueueStatus,
  type RunCommand,
  type RunStatusInfo,
  type SubmitRequest,
  type UnknownAgents,
} from "./schemas.js";
import { randomUUID } from "node:crypto";

/** Checks shared by every store: the same request gets the same answer from memory, SQLite and Postgres. */

/**
 * The input and command limits (`DEFAULT_INPUT_LIMITS`, the restore side's with room for the
 * checkpoint around them), checked before anything recursive sees the value: a value accepted here
 * is one every later checkpoint of the run can be restored with.
 */
function checkLimits(value: unknown, field: string, method: string): void {
  const found = inputLimitProblem(value);
  if (!found) return;
  const { maxDepth, maxChars } = DEFAULT_INPUT_LIMITS;
  throw new RunQueueError(
    "invalid_input",
    `${method}: ${field}${found.path ? `.${found.path}` : ""} is refused: ${found.problem} ` +
      `(the limits are ${maxDepth} levels and ${maxChars} characters of JSON, so that every checkpoint of the run restores; pass less, or a reference to it)`,
  );
}

export function checkSubmit(request: SubmitRequest): { agent: string; input: Record<string, unknown>; runId: string } {
  if (request !== null && typeof request === "object") checkLimits((request as { input?: unknown }).input, "input", "submit");
  const parsed = SubmitSchema.safeParse(request);
  if (!parsed.success) throw new RunQueueError("invalid_input", `submit: ${firstIssue(parsed.error, "request")} (a request is { agent, input?: { messages?, state? }, runId? })`);
  return { agent: parsed.data.agent, input: parsed.data.input, runId: parsed.data.runId ?? randomUUID() };
}

export function checkRunId(runId: string, method: string): string {
  const parsed = RunIdSchema.safeParse(runId);
  if (!parsed.success) throw new RunQueueError("invalid_input", `${method}: ${firstIssue(parsed.error, "runId")}`);
  return parsed.data;
}

export function checkCommand(command: RunCommand): RunCommand {
  checkLimits(command, "command", "send");
  const parsed = RunCommandSchema.safeParse(command);
  if (!parsed.success) {
    throw new RunQueueError(
      "invalid_input",
      `send: ${firstIssue(parsed.error, "event")} (send { type: "guard.approve", callId }, { type: "guard.reject", callId, reason? } or { type: "agent.cancel", reason? })`,
    );
  }
  return parsed.data;
}

export function checkListOptions(options: ListOptions): { status?: QueueStatus; agent?: string; limit: number } {
  const parsed = ListOptionsSchema.safeParse(options);
  if (!parsed.success) throw new RunQueueError("invalid_input", `list: ${firstIssue(parsed.error, "options")}`);
  return parsed.data;
}

/** Why this command cannot be sent to this run (undefined when it can). */
export function sendProblem(runId: string, command: RunCommand, run: { status: QueueStatus; pending: RunStatusInfo["pendingApprovals"] } | undefined): RunQueueError | undefined {
  if (!run) return new RunQueueError("unknown_run", `send: there is no run ${JSON.stringify(runId)}; check the id with store.list({}) (or jianmu runs)`);
  if (FINAL_STATUSES.includes(run.status)) {
    return new RunQueueError("finished_run", `send: run ${runId} already ${run.status}; ${command.type} can no longer change it (submit a new run instead)`);
  }
  if (command.type === "agent.cancel") return undefined;
  if (run.pending.some((p) => p.callId === command.callId)) return undefined;
  const waiting = run.pending.map((p) => p.callId).join(", ");
  return new RunQueueError(
    "not_pending",
    waiting
      ? `send: call ${command.callId} of run ${runId} is not waiting for approval; the pending calls are ${waiting}`
      : `send: run ${runId} has no call waiting for approval (status ${run.status}); send decisions once status(runId).pendingApprovals lists the call`,
  );
}

/**
 * A store set to `unknownAgents: "refuse"` refuses a submit for an agent no worker has registered
 * (`known` is read only then); by default the run is queued for a worker that starts later.
 */
export async function checkAgentKnown(agent: string, policy: UnknownAgents, known: () => readonly string[] | Promise<readonly string[]>): Promise<void> {
  if (policy === "queue") return;
  const names = await known();
  if (names.includes(agent)) return;
  throw new RunQueueError(
    "unknown_agent",
    `submit: no worker knows agent "${agent}" ` +
      (names.length > 0 ? `(workers know: ${names.join(", ")}); ` : "(no worker has connected to this store yet); ") +
      `start a worker with startWorker({ agents: { "${agent}": machine } }) (or jianmu worker --agents <module exporting ${agent}) before submitting, or fix the agent name ` +
      '(a store with unknownAgents: "queue" queues such runs instead)',
  );
}
