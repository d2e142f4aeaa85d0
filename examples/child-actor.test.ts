import { describe, expect, it } from "vitest";
import { main } from "./child-actor.js";

describe("examples/child-actor", () => {
  it("a parent workflow forwards the user's approval to the invoked agent and reads its answer", async () => {
    const { destination, failure, asked, states } = await main({ mode: "offline", log: () => {} });

    // The recorded model's final turn, reached only after the approved tool call ran.
    expect(destination).toBe("The capital of the UK is London.");
    expect(failure).toBeNull();
    expect(asked).toEqual([{ callId: "call_ZR5UUuTt3pf61kjwAJIYdVMj", name: "get_capital", arguments: '{"country":"UK"}', reason: "get_capital needs approval before it runs (it is tagged network)" }]);
    expect(states).toEqual(["researching", "booking"]);
  });
});
