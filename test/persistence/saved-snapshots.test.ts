import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { finishScenario, scenarios } from "../fixtures/snapshots/scenarios.mjs";

/**
 * Runs saved by earlier builds must keep restoring: every set under test/fixtures/snapshots/ (one per
 * snapshot format version) is restored by this build's agent and driven to its end. A format change
 * adds a set; it never rewrites an old one.
 */
const root = join(import.meta.dirname, "../fixtures/snapshots");
const sets = readdirSync(root).filter((name) => /^v\d+$/.test(name));
const scenarioNames = Object.keys(scenarios);

describe("snapshots saved by earlier builds", () => {
  it("has a saved set holding every scenario", () => {
    expect(sets.length).toBeGreaterThan(0);
    for (const set of sets) expect(readdirSync(join(root, set)).sort()).toEqual(scenarioNames.map((name) => `${name}.json`).sort());
  });

  for (const set of sets) {
    for (const name of scenarioNames) {
      it(`${set}/${name} restores and finishes`, async () => {
        const saved = readFileSync(join(root, set, `${name}.json`), "utf8");
        const expected = scenarios[name]!.expect;
        const result = await finishScenario(name, saved);
        expect(result.output).toMatchObject({ status: expected.status, finalAnswer: expected.finalAnswer, rounds: expected.rounds });
        // Tools ran exactly as often as the restored run still owed them, and the model was called as scripted.
        expect(result.runs).toEqual(expected.runs);
        expect(result.modelCalls).toBe(expected.resumedModelCalls);
        expect(result.remaining).toBe(0);
        expect(result.output.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant"]);
        if (expected.namespace) expect(result.output.state[expected.namespace]).toMatchObject({ finalAnswer: expected.finalAnswer });
        if (expected.providerLog) expect(result.log).toEqual(expected.providerLog);
      });
    }
  }
});
