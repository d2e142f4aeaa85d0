import { describe, expect, it } from "vitest";
import { EXAMPLE_MODES, runInMode } from "./support/live.js";
import { main, OFFLINE_TURNS } from "./minimal.js";
import { textOf } from "../index.js";

describe.each(EXAMPLE_MODES)("examples/minimal (%s)", (mode) => {
  it("answers 25 * 4 + 10 with the calculator's 110", async () => {
    const lines: string[] = [];
    const { result: output, requests } = await runInMode(mode, OFFLINE_TURNS, (options) => main({ ...options, log: (line) => lines.push(line) }));

    expect(output.status).toBe("succeeded");
    expect(output.finalAnswer).toContain("110");
    expect(output.rounds).toBe(2);
    // The tool really ran: its result is the observation the model read in round 2.
    const observation = output.messages.find((message) => message.role === "tool");
    expect(observation && JSON.parse(textOf(observation.content))).toEqual({ expression: "25 * 4 + 10", result: 110 });
    expect(lines[0]).toMatch(mode === "offline" ? /^offline: .*127\.0\.0\.1/ : /^live: OpenAI-compatible endpoint http:\/\/127\.0\.0\.1:\d+\/v1, model gpt-4o-mini$/);
    if (mode === "live") expect(requests).toHaveLength(2);
    expect(lines.at(-1)).toContain("110");
  });
});
