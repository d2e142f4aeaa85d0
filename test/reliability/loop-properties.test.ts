import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { textOf } from "../../actors/content-parts.js";
import { runScenario } from "./loop-driver.js";
import { checkInvariants } from "./loop-invariants.js";
import { scenarioArbitrary } from "./loop-scenario.js";
import { CaseCounter, propertyRuns, watchProcess } from "./process-watch.js";

/*
 * Property-based tests of the ReAct loop: random model scripts (text, calls to known and unknown
 * tools, malformed and huge arguments, model errors), random guard verdicts, random approver
 * behaviour and random interleavings of replies, tool completions, commands and cancellation,
 * chosen by fast-check's scheduler. Every case must keep every invariant of loop-invariants.ts.
 *
 * JIANMU_PROPERTY_RUNS=N runs N cases per property instead of the defaults (300 + 250).
 */

const counter = new CaseCounter();
/** What the cases reached, so a generator that stopped reaching the interesting paths fails loudly. */
const reached = new Map<string, number>();
const note = (what: string) => reached.set(what, (reached.get(what) ?? 0) + 1);

function noteCoverage(observation: Awaited<ReturnType<typeof runScenario>>): void {
  const output = observation.output;
  note(output?.status === "succeeded" ? "succeeded" : `failed:${output?.termination?.reason}`);
  if (observation.inFlightAtEnd.length > 0) note("aborted in flight");
  if (observation.executions.length > 0) note("tool ran");
  const types = new Set(observation.events.map((e) => e.type));
  for (const type of ["guard.approval.requested", "guard.approval.refused", "tool.call.denied"]) if (types.has(type as never)) note(type);
  if (observation.events.some((e) => e.type === "guard.approval.decided" && e.edited)) note("edited approval");
  if (output?.messages.some((m) => m.role === "tool" && textOf(m.content).includes("[output truncated:"))) note("truncated");
}
/** One signal for every case, like an application's shutdown signal: runs must leave no listener on it. */
const appShutdown = new AbortController();

/** Test time limit: generous per case (a case takes a few milliseconds), so a large JIANMU_PROPERTY_RUNS fits. */
const budgetFor = (runs: number) => Math.max(60_000, runs * 60);

async function holds(scenario: Parameters<typeof runScenario>[0], scheduler: fc.Scheduler): Promise<void> {
  counter.tick();
  const watch = watchProcess();
  let observation;
  try {
    observation = await runScenario(scenario, scheduler, appShutdown.signal);
  } finally {
    await watch.stop();
  }
  checkInvariants(observation);
  noteCoverage(observation);
  if (watch.rejections.length > 0) throw new Error(`unhandled rejection during the run: ${String(watch.rejections[0])}`);
  if (watch.consoleLines.length > 0) throw new Error(`the run wrote to the console: ${watch.consoleLines[0]!.slice(0, 300)}`);
  const listenerWarnings = watch.warnings.filter((w) => w.name === "MaxListenersExceededWarning");
  if (listenerWarnings.length > 0) throw new Error(`MaxListenersExceededWarning: ${listenerWarnings[0]!.message}`);
}

describe("the ReAct loop under random scripts, verdicts and interleavings", () => {
  afterAll(() => {
    // Every generated case ran; without JIANMU_PROPERTY_RUNS that is the acceptance bar of at least 500 per `npm test`.
    expect(counter.count).toBeGreaterThanOrEqual(propertyRuns(300) + propertyRuns(250));
    if (process.env["JIANMU_PROPERTY_RUNS"] === undefined) expect(counter.count).toBeGreaterThanOrEqual(500);
    if (counter.count >= 500) {
      for (const what of [
        "succeeded",
        "failed:cancelled",
        "failed:modelError",
        "failed:maxIterations",
        "failed:tokenBudget",
        "failed:approvalTimeout",
        "aborted in flight",
        "tool ran",
        "guard.approval.requested",
        "guard.approval.refused",
        "tool.call.denied",
        "edited approval",
        "truncated",
      ]) {
        expect(reached.get(what) ?? 0, `no generated case reached "${what}"`).toBeGreaterThan(0);
      }
    }
    console.info(`property cases: ${counter.count}; reached: ${JSON.stringify(Object.fromEntries(reached))}`);
  });

  it("without cancellation: every run reaches its predicted final state and keeps every invariant", async () => {
    await fc.assert(fc.asyncProperty(scenarioArbitrary({ cancel: false }), fc.scheduler(), holds), { numRuns: propertyRuns(300) });
  }, budgetFor(propertyRuns(300)));

  it("cancelled at any moment (by event or by the caller's signal): the run ends cancelled or earlier, aborting what was in flight", async () => {
    await fc.assert(fc.asyncProperty(scenarioArbitrary({ cancel: true }), fc.scheduler(), holds), { numRuns: propertyRuns(250) });
  }, budgetFor(propertyRuns(250)));
});
