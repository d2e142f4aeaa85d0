import type { ReactMachine } from "../../machines/react-machine.js";
import type { ToolJournal } from "../../actors/tool-journal.js";

export type FixtureAgents = {
  basic: ReactMachine;
  approver: ReactMachine;
  deadline: ReactMachine;
};

export function makeAgents(
  jianmu: { createReactMachine: unknown; defineTool: unknown; ModelClient: unknown; requireApproval: unknown },
  options: { baseURL: string; journal: ToolJournal; effect: (note: string) => unknown; approvalTimeoutMs?: number },
): FixtureAgents;
