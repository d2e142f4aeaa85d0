import { describe, expect, it } from "vitest";
import { toolMessage, human } from "../../actors/messages.js";
import type { ToolOutcome } from "../../actors/tool-outcome.js";
import { outcomeApart, packOutcome, packOutcomeApart, toolResultsAmong } from "../../machines/persistence/log/journal-packing.js";

const outcome: ToolOutcome = { callId: "call_1", name: "lookup", status: "ok", content: 'a result "quoted", \u0000 and \ud800 kept', durationMs: 3, effectTags: [] };

describe("a tool result stored once (PostgreSQL's journal, migration 6)", () => {
  it("reads an outcome back from its own columns, byte for byte with its keys in order", () => {
    const { packed, content } = packOutcomeApart(outcome);
    expect(JSON.stringify(outcomeApart(packed, content, null))).toBe(JSON.stringify(outcome));
  });

  it("reads it back from the tool message the log stores once the journal dropped the text; a save finds that message by call id and the hash of its text", () => {
    const { packed, sha256 } = packOutcomeApart(outcome);
    const element = JSON.stringify(toolMessage(outcome.callId, outcome.content, { name: outcome.name }));
    expect(JSON.stringify(outcomeApart(packed, null, element))).toBe(JSON.stringify(outcome));
    const found = toolResultsAmong([
      { stream: 4, seq: 0, text: JSON.stringify(human("hi")) },
      { stream: 4, seq: 1, text: element },
    ]);
    expect(found).toEqual([{ callId: "call_1", stream: 4, seq: 1, sha256 }]);
  });

  it("leaves a message whose text differs to keep its own copy: another hash, or parts instead of text", () => {
    const { sha256 } = packOutcomeApart(outcome);
    const [other] = toolResultsAmong([{ stream: 1, seq: 0, text: JSON.stringify(toolMessage("call_1", "another result")) }]);
    expect(other!.sha256.equals(sha256)).toBe(false);
    const parts = JSON.stringify({ role: "tool", toolCallId: "call_1", content: [{ type: "text", text: outcome.content }] });
    expect(toolResultsAmong([{ stream: 1, seq: 0, text: parts }])).toEqual([]);
  });

  it("reads a row written before migration 6 (the whole outcome packed) as before; a damaged one is undefined", () => {
    expect(outcomeApart(packOutcome(outcome), null, null)).toBe(JSON.stringify(outcome));
    expect(outcomeApart(packOutcomeApart(outcome).packed, Buffer.from("not deflated"), null)).toBeUndefined();
  });
});
