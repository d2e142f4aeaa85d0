import { editedArgumentsProblem } from "../../machines/chart/approval-piece.js";
import { runtimeOf } from "../../machines/chart/agent-runtime.js";
import type { ReactMachine } from "../../machines/react-machine.js";
import type { RunStatusInfo } from "../../queue/schemas.js";
import type { RunCommand } from "../protocol.js";
import { HttpError } from "./errors.js";

/**
 * An approval with edited arguments, checked before it goes to a run queue's inbox, as the chart
 * checks it in process: arguments the tool's schema refuses are a 422 naming `args`, nothing is
 * recorded, and the person can send a corrected decision. Checked here against the agent's own
 * tools; a call of a tool provider's (known only to the worker running it) or of a nested agent goes
 * to the run, which refuses a bad edit itself (and then takes a corrected one: queue/schemas.ts dedupeKeyOf).
 */
export function checkQueuedEdit(machine: ReactMachine, info: RunStatusInfo, command: RunCommand): void {
  if (command.type !== "guard.approve" || command.args === undefined) return;
  const pending = info.pendingApprovals.find((call) => call.callId === command.callId);
  if (!pending || pending.agentPath !== undefined) return;
  const tool = runtimeOf(machine)?.tools.staticSet.get(pending.name);
  if (!tool) return;
  const problem = editedArgumentsProblem(tool, pending.name, command.args);
  if (problem !== undefined) throw new HttpError(422, "command_refused", problem, "args");
}
