import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, expectTypeOf, it } from "vitest";
import type { z } from "zod";
import { CALL_DECISION_STATUSES, CallDecisionSchema, CallRecordSchema } from "../../actors/call-decision.js";
import { ErrorInfoSchema } from "../../actors/errors.js";
import type { Message } from "../../actors/messages.js";
import type {
  AgentOutput,
  Usage,
  AgentContext,
  AgentInput,
  CallDecision,
  CallRecord,
  CheckpointSummary,
  ErrorInfo,
  Guard,
  LoopContext,
  PersistedAgent,
  RunStatus,
  Termination,
  TerminationReason,
  ToolInfo,
} from "../../index.js";
import { AgentContextSchema, AgentInputSchema, AgentOutputSchema, LoopContextSchema } from "../../machines/contract/context.js";
import { JournalEntrySchema, type JournalEntry } from "../../actors/tool-journal.js";
import { UsageSchema } from "../../actors/usage.js";
import { TERMINATION_REASONS } from "../../machines/contract/events.js";
import { PersistedAgentSchema, restoreAgent, SnapshotError, SNAPSHOT_FORMAT } from "../../machines/persistence/persistence.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { RunStatusSchema } from "../../machines/contract/run-status.js";
import { TerminationSchema } from "../../machines/contract/termination.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import { ToolInfoSchema } from "../../tools/tool.js";
import type { RunStatus as WireRunStatus } from "../../web/protocol.js";
import { countingTool } from "../persistence/helpers.js";

/*
 * Persisted shapes (what saved snapshots and checkpoint records hold) are written once, as the zod
 * schema that checks them on restore; the public types are that schema's `z.infer`. The `expectTypeOf`
 * lines are checked by `npm run typecheck` (tsc covers test/): a type that drifts from its schema,
 * or from what it meant before, fails to compile.
 */

describe("persisted types are their schemas", () => {
  it("each public persisted type is z.infer (or z.input) of the schema restoring checks it with", () => {
    expectTypeOf<CallDecision>().toEqualTypeOf<z.infer<typeof CallDecisionSchema>>();
    expectTypeOf<CallRecord>().toEqualTypeOf<z.infer<typeof CallRecordSchema>>();
    expectTypeOf<LoopContext>().toEqualTypeOf<z.infer<typeof LoopContextSchema>>();
    expectTypeOf<AgentContext>().toEqualTypeOf<z.infer<typeof AgentContextSchema>>();
    expectTypeOf<AgentInput>().toEqualTypeOf<z.input<typeof AgentInputSchema>>();
    expectTypeOf<Termination>().toEqualTypeOf<z.infer<typeof TerminationSchema>>();
    expectTypeOf<ErrorInfo>().toEqualTypeOf<z.infer<typeof ErrorInfoSchema>>();
    expectTypeOf<ToolInfo>().toEqualTypeOf<z.infer<typeof ToolInfoSchema>>();
    expectTypeOf<RunStatus>().toEqualTypeOf<z.infer<typeof RunStatusSchema>>();
    expectTypeOf<PersistedAgent>().toEqualTypeOf<z.input<typeof PersistedAgentSchema>>();
    // What the run queue stores and `wait` checks; the journal's entries; the counts inside both.
    expectTypeOf<Omit<AgentOutput, "output">>().toEqualTypeOf<Omit<z.infer<typeof AgentOutputSchema>, "output">>();
    expectTypeOf<AgentOutput<{ answer: string }>["output"]>().toEqualTypeOf<{ answer: string } | undefined>();
    expectTypeOf<JournalEntry>().toEqualTypeOf<z.infer<typeof JournalEntrySchema>>();
    expectTypeOf<Usage>().toEqualTypeOf<z.infer<typeof UsageSchema>>();
    // The web protocol sends the same status the checkpoint is saved with.
    expectTypeOf<WireRunStatus>().toEqualTypeOf<RunStatus>();
    // The loop's fields are the other persisted types, not copies of them.
    expectTypeOf<LoopContext["decisions"]>().toEqualTypeOf<CallDecision[]>();
    expectTypeOf<LoopContext["history"]>().toEqualTypeOf<CallRecord[]>();
    expectTypeOf<LoopContext["tools"]>().toEqualTypeOf<ToolInfo[]>();
    expectTypeOf<LoopContext["termination"]>().toEqualTypeOf<Termination | null>();
    expectTypeOf<AgentContext["loop"]>().toEqualTypeOf<LoopContext>();
    expectTypeOf<CheckpointSummary["status"]>().toEqualTypeOf<PersistedAgent["status"]>();
    // At runtime: the schemas the types come from are the ones restoring uses.
    expect(LoopContextSchema.shape.decisions.element).toBe(CallDecisionSchema);
    expect(AgentContextSchema.shape.loop).toBe(LoopContextSchema);
    expect(PersistedAgentSchema.shape.status).toBe(RunStatusSchema);
  });

  it("a decision status is one list: the type, the restore check and the list agree", () => {
    // The example: a status added to the type but not to the restore check (or the other way
    // round) compiled, then every restored run holding it was refused as damaged. Now they are one.
    expectTypeOf<CallDecision["status"]>().toEqualTypeOf<(typeof CALL_DECISION_STATUSES)[number]>();
    expectTypeOf<CallDecision["status"]>().toEqualTypeOf<(typeof CallDecisionSchema.shape.status.options)[number]>();
    expectTypeOf<Termination["reason"]>().toEqualTypeOf<TerminationReason>();
    expectTypeOf<TerminationReason>().toEqualTypeOf<(typeof TERMINATION_REASONS)[number]>();
    expect(CallDecisionSchema.shape.status.options).toEqual([...CALL_DECISION_STATUSES]);
    expect(TerminationSchema.shape.reason.options).toEqual([...TERMINATION_REASONS]);
  });

  it("the public persisted types keep their meaning", () => {
    expectTypeOf<RunStatus>().toEqualTypeOf<"running" | "awaitingApproval" | "succeeded" | "failed">();
    expectTypeOf<CallDecision>().toEqualTypeOf<{
      callId: string;
      name: string;
      arguments?: string;
      status: "allowed" | "denied" | "pending" | "approved" | "rejected";
      reason?: string;
      editedArguments?: string;
      deadline?: number;
      onTimeout?: "reject" | "fail";
    }>();
    expectTypeOf<CallRecord>().toEqualTypeOf<{ callId: string; name: string; at: number }>();
    expectTypeOf<ToolInfo>().toEqualTypeOf<{
      name: string;
      description: string;
      inputSchema: { [key: string]: unknown };
      parallelSafe: boolean;
      effectTags: string[];
      timeoutMs?: number;
      returnDirect?: boolean;
    }>();
    expectTypeOf<ErrorInfo>().toEqualTypeOf<{
      name: string;
      message: string;
      kind?: string;
      status?: number;
      model?: string;
      endpoint?: string;
      code?: string;
      provider?: string;
    }>();
    expectTypeOf<Termination>().toEqualTypeOf<{ reason: TerminationReason; iterations: number; error?: ErrorInfo; detail?: string; raw?: string; guardrail?: string }>();
    expectTypeOf<AgentContext>().toEqualTypeOf<{ state: Record<string, unknown>; loop: LoopContext }>();
    expectTypeOf<AgentInput>().toEqualTypeOf<{ messages?: Message[]; state?: Record<string, unknown>; runId?: string; threadId?: string; limits?: { tokens?: number; cost?: number } }>();
    expectTypeOf<PersistedAgent>().toEqualTypeOf<{
      format: typeof SNAPSHOT_FORMAT;
      version: 1 | 2;
      machine: string;
      runId: string;
      state: string;
      status: RunStatus;
      iteration: number;
      savedAt: number;
      snapshot: Record<string, unknown>;
    }>();
    expectTypeOf<CheckpointSummary>().toEqualTypeOf<{ runId: string; machine: string; state: string; status: RunStatus; iteration: number; savedAt: number }>();
    // Guards read the persisted call history.
    expectTypeOf<Parameters<Guard>[1]["history"]>().toEqualTypeOf<readonly CallRecord[]>();
    expect(SNAPSHOT_FORMAT).toBe("jianmu.snapshot");
  });
});

describe("every value the persisted types allow is restored", () => {
  // The parked run saved by the first snapshot format, restored by the agent that saved it.
  const parked = readFileSync(join(import.meta.dirname, "../fixtures/snapshots/v1/parked-for-approval.json"), "utf8");
  const machine = createReactMachine({
    name: "Parked",
    modelClient: scriptedModel([]),
    tools: [countingTool().tool],
    constraints: [(call) => (call.name === "record" ? { decision: "pending", reason: "record needs a person's approval" } : { decision: "allow" })],
    configFile: false,
  });
  type Saved = { snapshot: { context: { loop: LoopContext } } };
  const withLoop = (change: (loop: LoopContext) => void): string => {
    const saved = JSON.parse(parked) as Saved;
    change(saved.snapshot.context.loop);
    return JSON.stringify(saved);
  };
  const refusal = (saved: string): SnapshotError | undefined => {
    try {
      restoreAgent(machine, saved);
      return undefined;
    } catch (error) {
      if (error instanceof SnapshotError) return error;
      throw error;
    }
  };

  it("each decision status", () => {
    for (const status of CALL_DECISION_STATUSES) {
      expect(refusal(withLoop((loop) => (loop.decisions[0]!.status = status))), status).toBeUndefined();
    }
    const unknown = refusal(withLoop((loop) => ((loop.decisions[0] as { status: string }).status = "maybe")));
    expect(unknown?.problem).toBe("context");
    expect(unknown?.message).toMatch(/snapshot\.context\.loop\.decisions\[0\]\.status /);
  });

  it("each termination reason, with an error as toErrorInfo keeps it", () => {
    for (const reason of TERMINATION_REASONS) {
      const termination: Termination = { reason, iterations: 1, error: { name: "ModelError", message: "boom", status: 429, code: "rate_limit_exceeded" }, detail: "why" };
      expect(refusal(withLoop((loop) => (loop.termination = termination))), reason).toBeUndefined();
    }
    const badError = refusal(withLoop((loop) => (loop.termination = { reason: "modelError", iterations: 1, error: { name: "ModelError", message: "boom", status: "429" as unknown as number } })));
    expect(badError?.problem).toBe("context");
    expect(badError?.message).toMatch(/snapshot\.context\.loop\.termination\.error\.status /);
  });
});
