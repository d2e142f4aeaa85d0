import { describe, expect, it } from "vitest";
import { generateAgentPaths } from "../../testing/model-based.js";
import { createAgent, executed } from "./fixture.js";

/**
 * The defaults a user gets: no scripts (turns made from the tools' schemas) and no policy
 * (every batch tried as allowed, denied, pending, pending with a rejecting or failing deadline;
 * replays script the guard step).
 */

const covering = generateAgentPaths(createAgent());
const everyEdge = generateAgentPaths(createAgent(), { select: "edges" });

describe("model-based with the defaults", () => {
  it("covers the whole chart", () => {
    console.log(`model-based coverage with default scripts and enumerated verdicts: ${covering.coverage.text}; ${covering.paths.length} covering paths, ${everyEdge.paths.length} edge paths`);
    expect(covering.coverage.missing).toEqual([]);
    expect(everyEdge.coverage.missing).toEqual([]);
    expect(covering.violations).toEqual([]);
    // Covering paths are a small subset of the edges.
    expect(covering.paths.length).toBeLessThan(everyEdge.paths.length / 10);
  });

  it("makes its default turns from the tools' schemas, valid enough to run", () => {
    const turns = everyEdge.paths.flatMap((p) => p.steps.filter((s) => s.label.startsWith("model calls")).map((s) => s.label));
    expect(new Set(turns)).toEqual(
      new Set(["model calls add", "model calls delete_all", "model calls send_email", "model calls transfer_funds", "model calls launch", "model calls final_answer", "model calls flaky", "model calls a tool that does not exist", "model calls add, spending the whole token budget"]),
    );
  });

  for (const path of covering.paths) {
    it(path.description, async () => {
      const { output } = await path.replay();
      expect(output.termination?.reason).toBe(path.finalState.reason);
    });
  }

  it("replays every edge path live to the same final state, running only authorized calls", async () => {
    let ran = 0;
    for (const path of everyEdge.paths) {
      executed.length = 0;
      const result = await path.replay();
      expect(result.output.termination?.reason, path.description).toBe(path.finalState.reason);
      for (const callId of executed) expect([...result.authorized], path.description).toContain(callId);
      ran += executed.length;
    }
    expect(ran).toBeGreaterThan(0);
  });
});
