import type { Tool } from "../tools/tool.js";
import { parseArgs, type CallDecision } from "./guard.js";
import type { ToolCall } from "./messages.js";
import type { JournalEntry } from "./tool-journal.js";
import { deniedOutcome, rejectedOutcome, truncateOutput, type ToolErrorKind, type ToolOutcome } from "./tool-outcome.js";

/**
 * What becomes of one tool call, decided by one pure function from what is known about it: its
 * guard decision, the tools on offer, what the tool journal holds. The tool executor acts on the
 * plan (runs the tool, journals, reports); the model-based tests predict the executor's outcomes
 * with the same function, so the two cannot drift apart.
 */

/** What planning needs of a tool. A live `Tool` fits, and so does a stand-in made from a tool's description. */
export type PlannedTool = Pick<Tool, "name" | "validate" | "idempotent">;

/**
 * What the tool journal holds for the call. `unread`: a journal is kept but not asked yet (the plan
 * is then `readJournal`); `empty`: it holds nothing for the call. Leave it out when no journal is kept.
 */
export type JournalView = "unread" | "empty" | JournalEntry;

export interface CallFacts<T extends PlannedTool> {
  call: ToolCall;
  /** The guard's (or approver's) decision on the call; none recorded denies it. */
  decision: CallDecision | undefined;
  /** The agent's tool of that name, if it has one. */
  lookup: (name: string) => T | undefined;
  /** Every tool's name: read only to tell the model what it may call instead of an unknown tool. */
  toolNames: () => readonly string[];
  /** The tools offered this round (`prepareRound`): a call of any other is an unknown tool. */
  offered?: readonly string[] | undefined;
  journal?: JournalView;
}

export type CallPlan<T extends PlannedTool> =
  /** Not run (denied, pending, rejected): this is its outcome, and it never starts. */
  | { kind: "answer"; outcome: ToolOutcome }
  /** It may run (it starts now, with `arguments`): read the journal and plan again with what it holds. */
  | { kind: "readJournal"; arguments: string }
  /** It ran before a restart: the recorded outcome is its outcome; the tool is not run again. */
  | { kind: "replay"; arguments: string; outcome: ToolOutcome }
  /** A bad call (unknown tool, arguments that are not an object or do not fit): an error observation, not journaled. */
  | { kind: "refuse"; arguments: string; errorKind: Extract<ToolErrorKind, "unknown_tool" | "invalid_json" | "invalid_arguments">; message: string }
  /** It began before a restart and never reported back, and the tool may not run twice: journaled as unknown. */
  | { kind: "interrupted"; arguments: string; errorKind: "outcome_unknown"; message: string }
  /** Run `tool` with the validated `args`; `claim`: write the journal's `started` claim first and run only if it is won. */
  | { kind: "run"; arguments: string; tool: T; args: Record<string, unknown>; claim: boolean };

/** The plans possible when no journal is kept: the call is answered, refused or run. */
export type UnjournaledPlan<T extends PlannedTool> = Extract<CallPlan<T>, { kind: "answer" | "refuse" | "run" }>;

/** Whether a decision lets the call run (allowed by the guards, or approved). */
export function mayRun(decision: Pick<CallDecision, "status"> | undefined): boolean {
  return decision?.status === "allowed" || decision?.status === "approved";
}

/** The arguments a call runs with: the approver's edit when there is one, else the model's. */
function argumentsOf(call: ToolCall, decision: CallDecision | undefined): string {
  return decision?.editedArguments ?? call.arguments;
}

/** Decide what becomes of one call. Pure: the same facts give the same plan. */
export function planCall<T extends PlannedTool>(facts: CallFacts<T> & { journal?: undefined }): UnjournaledPlan<T>;
export function planCall<T extends PlannedTool>(facts: CallFacts<T> & { journal: Exclude<JournalView, "unread"> }): Exclude<CallPlan<T>, { kind: "readJournal" }>;
export function planCall<T extends PlannedTool>(facts: CallFacts<T>): CallPlan<T>;
export function planCall<T extends PlannedTool>(facts: CallFacts<T>): CallPlan<T> {
  const { call, decision, journal } = facts;
  if (!decision || decision.status === "denied" || decision.status === "pending") {
    return { kind: "answer", outcome: deniedOutcome(call, decision?.reason ?? "no guard decision was recorded for this call") };
  }
  if (decision.status === "rejected") return { kind: "answer", outcome: rejectedOutcome(call, decision.reason ?? "the approver rejected it") };
  const raw = argumentsOf(call, decision);
  if (journal === "unread") return { kind: "readJournal", arguments: raw };
  const entry = journal === "empty" ? undefined : journal;
  // The journal comes first: a recorded outcome stands even if the tool has gone since.
  if (entry?.state === "completed") return { kind: "replay", arguments: raw, outcome: entry.outcome };
  const tool = facts.offered && !facts.offered.includes(call.name) ? undefined : facts.lookup(call.name);
  if (!tool) {
    const known = (facts.offered ?? facts.toolNames()).join(", ") || "none";
    return { kind: "refuse", arguments: raw, errorKind: "unknown_tool", message: `there is no tool named "${call.name}". Available tools: ${known}.` };
  }
  const parsed = parseArgs(raw);
  if (!parsed) {
    return { kind: "refuse", arguments: raw, errorKind: "invalid_json", message: `the arguments for ${call.name} are not a JSON object: ${truncateOutput(raw, 200)}` };
  }
  const checked = tool.validate(parsed);
  if (!checked.ok) return { kind: "refuse", arguments: raw, errorKind: "invalid_arguments", message: `invalid arguments for ${call.name}: ${checked.error}` };
  if (entry?.state === "started" && !tool.idempotent) {
    return {
      kind: "interrupted",
      arguments: raw,
      errorKind: "outcome_unknown",
      message:
        `${call.name} was interrupted: the run restarted after this call began and before its result was recorded, ` +
        "so it may or may not have taken effect. It was not run again because the tool is not declared idempotent. " +
        "Check whether it took effect before calling it again.",
    };
  }
  // The claim: of two copies of this run racing for the call, only the one that wrote the
  // `started` entry runs it. An idempotent tool interrupted before may run again, claim or not.
  return { kind: "run", arguments: raw, tool, args: checked.value, claim: journal !== undefined && entry?.state !== "started" };
}
