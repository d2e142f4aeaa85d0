import { describe, expect, it } from "vitest";
import { human, type ToolMessage } from "../../actors/messages.js";
import { MemoryToolJournal, type JournalKey, type ToolJournal } from "../../actors/tool-journal.js";
import { failedOutcome, failureOf, ToolOutcomeSchema, type ToolOutcome } from "../../actors/tool-outcome.js";
import { SqliteCheckpointStore } from "../../machines/persistence/checkpoints/sqlite-store.js";
import type { AgentEmitted } from "../../machines/contract/events.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { runAgent } from "../../machines/runner.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import { countingTool } from "./helpers.js";

/**
 * A failed call's message is a value of its outcome (`error`, next to `errorKind`): the observation
 * is rendered from it, `tool.call.failed` reports it, and it survives the journal. Outcomes
 * journaled before the field existed still replay with the same text.
 */

const key: JournalKey = { runId: "run-errors", iteration: 0, callId: "c1" };
const callRecord = { toolCalls: [{ id: "c1", name: "record", arguments: { note: "n" } }] };

/** A run whose only call is already journaled: the executor replays it instead of running the tool. */
async function replay(journal: ToolJournal) {
  const { tool, runs } = countingTool();
  const events: AgentEmitted[] = [];
  const output = await runAgent(
    createReactMachine({ modelClient: scriptedModel([callRecord, { content: "done" }]), tools: [tool], journal }),
    { messages: [human("go")], runId: key.runId },
    { onEvent: (e) => events.push(e) },
  );
  expect(runs).toEqual([]);
  return { observation: output.messages.find((m): m is ToolMessage => m.role === "tool")!, failed: events.find((e) => e.type === "tool.call.failed") };
}

describe("failed outcomes carry their error as a value", () => {
  it("renders the observation from the message and reports the message itself, never read back from the text", () => {
    const outcome = failedOutcome({ id: "c1", name: "record" }, "threw", "record failed: disk full", 4);
    expect(outcome).toEqual({
      callId: "c1",
      name: "record",
      status: "error",
      content: "Error: record failed: disk full",
      errorKind: "threw",
      error: "record failed: disk full",
      durationMs: 4,
      effectTags: [],
    });
    expect(failureOf(outcome)).toEqual({ error: "record failed: disk full", errorKind: "threw" });
    // The message is the field: an observation worded otherwise does not change what is reported.
    expect(failureOf({ ...outcome, content: "Error: something else" })).toEqual({ error: "record failed: disk full", errorKind: "threw" });
  });

  it("keeps the error through a SQLite journal and replays it with the same text and event", async () => {
    const store = new SqliteCheckpointStore({ path: ":memory:" });
    const outcome = failedOutcome({ id: "c1", name: "record" }, "timeout", "record timed out after 50 ms", 50);
    store.completed(key, outcome);
    expect(store.lookup(key)).toEqual({ state: "completed", outcome });
    const { observation, failed } = await replay(store);
    expect(observation).toMatchObject({ content: "Error: record timed out after 50 ms", isError: true });
    expect(failed).toMatchObject({ callId: "c1", error: "record timed out after 50 ms", errorKind: "timeout", durationMs: 50 });
  });

  it("replays a failure journaled by an earlier build (no error field) with the text and event it had", async () => {
    const legacy: ToolOutcome = { callId: "c1", name: "record", status: "error", content: "Error: record failed: disk full", errorKind: "threw", durationMs: 3, effectTags: [] };
    expect(ToolOutcomeSchema.safeParse(legacy).success).toBe(true);
    for (const journal of [new MemoryToolJournal(), new SqliteCheckpointStore({ path: ":memory:" })]) {
      journal.completed(key, legacy);
      const { observation, failed } = await replay(journal);
      expect(observation).toMatchObject({ content: "Error: record failed: disk full", isError: true });
      expect(failed).toMatchObject({ callId: "c1", error: "record failed: disk full", errorKind: "threw", durationMs: 3 });
    }
  });
});
