import { describe, expect, it } from "vitest";
import { EXAMPLE_MODES, runInMode } from "./support/live.js";
import { main, RECORDED_TURNS } from "./child-actor.js";

describe.each(EXAMPLE_MODES)("examples/child-actor (%s)", (mode) => {
  it("a parent workflow forwards the user's approval to the invoked agent and reads its answer", async () => {
    const { result, requests } = await runInMode(mode, RECORDED_TURNS, (options) => main({ ...options, log: () => {} }));
    const { destination, failure, asked, states } = result;
    // Live, every model call went to the endpoint named by OPENAI_BASE_URL.
    if (mode === "live") expect(requests!.length).toBeGreaterThanOrEqual(2);

    // The recorded model's final turn, reached only after the approved tool call ran.
    expect(destination).toBe("The capital of the UK is London.");
    expect(failure).toBeNull();
    expect(asked).toEqual([{ callId: "call_ZR5UUuTt3pf61kjwAJIYdVMj", name: "get_capital", arguments: '{"country":"UK"}', reason: "get_capital needs approval before it runs (it is tagged network)" }]);
    expect(states).toEqual(["researching", "booking"]);
  });
});
