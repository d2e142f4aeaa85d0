import { describe, expect, it } from "vitest";
import { main } from "./minimal.js";

describe("examples/minimal", () => {
  it("answers 25 * 4 + 10 with the calculator's 110", async () => {
    const lines: string[] = [];
    const output = await main({ mode: "offline", log: (line) => lines.push(line) });

    expect(output.status).toBe("succeeded");
    expect(output.finalAnswer).toContain("110");
    expect(output.rounds).toBe(2);
    // The tool really ran: its result is the observation the model read in round 2.
    const observation = output.messages.find((message) => message.role === "tool");
    expect(observation && JSON.parse(observation.content)).toEqual({ expression: "25 * 4 + 10", result: 110 });
    expect(lines[0]).toMatch(/^offline: .*127\.0\.0\.1/);
    expect(lines.at(-1)).toContain("110");
  });
});
