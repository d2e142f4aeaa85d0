import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { TextProgress, type Terminal } from "../../cli/progress.js";
import type { AgentEmitted } from "../../machines/contract/events.js";

/** What `jianmu run` prints on stderr for a tool call that is retried: a quiet line per failed attempt, then the outcome. */
describe("the CLI's progress lines", () => {
  it("say which attempt of a retried tool call failed, why, and when it runs again", () => {
    let err = "";
    const sink = (keep: boolean) => new Writable({ write: (chunk: Buffer, _encoding, done) => ((err += keep ? chunk.toString() : ""), done()) });
    const term: Terminal = { out: sink(false), err: sink(true), env: {} };
    const progress = new TextProgress(term);
    const base = { agent: "ReActAgent", runId: "r1", iteration: 0, timestamp: 0 };
    const events = [
      { ...base, type: "tool.call.started", callId: "c1", name: "rate", arguments: "{}" },
      { ...base, type: "tool.call.retrying", callId: "c1", name: "rate", attempt: 1, attempts: 3, delayMs: 250, error: "rate failed: 503 from upstream", errorKind: "threw" },
      { ...base, type: "tool.call.completed", callId: "c1", name: "rate", durationMs: 300, output: "1.08" },
    ] as AgentEmitted[];
    for (const event of events) progress.event(event);
    expect(err.split("\n")).toEqual(["→ rate {}", "  rate failed (attempt 1 of 3): 503 from upstream — again in 250 ms", "✓ rate → 1.08 (300 ms)", ""]);
  });
});
