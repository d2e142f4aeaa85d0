import { describe, expect, it } from "vitest";
import { human } from "../../actors/messages.js";
import { failedOutput } from "../../queue/run-store.js";
import { RunQueueError } from "../../queue/errors.js";
import { waitForOutput } from "../../queue/wait.js";

const never = () => () => undefined;

describe("waitForOutput: a stored output is checked before it is handed back", () => {
  const good = failedOutput("r1", "could not start", { messages: [human("hi")] });

  it("hands back a stored output that fits AgentOutputSchema, as JSON text (SQLite, memory) or parsed (PostgreSQL)", async () => {
    expect(await waitForOutput(async () => JSON.stringify(good), never, "r1", 10)).toEqual(good);
    expect(await waitForOutput(async () => good, never, "r1", 10)).toEqual(good);
  });

  it.each([
    ["not JSON", "{status", /stored output of run "r1" is damaged/],
    ["a wrong status", JSON.stringify({ ...good, status: "won" }), /damaged \(output\.status: /],
    ["usage that is not counts", { ...good, usage: { promptTokens: -1, completionTokens: 0, totalTokens: 0 } }, /output\.usage\.promptTokens/],
    ["a message of no known role", { ...good, messages: [{ role: "robot", content: "x" }] }, /output\.messages\.0/],
  ])("refuses %s as damaged, naming the field", async (_, stored, message) => {
    const error = await waitForOutput(async () => stored, never, "r1", 10).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RunQueueError);
    expect(error).toMatchObject({ problem: "damaged", message: expect.stringMatching(message) });
  });

  it("keeps waiting while nothing is stored", async () => {
    let reads = 0;
    const output = await waitForOutput(async () => (++reads < 3 ? null : good), never, "r1", 5);
    expect(reads).toBe(3);
    expect(output.runId).toBe("r1");
  });
});
