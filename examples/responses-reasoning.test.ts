import { describe, expect, it } from "vitest";
import { EXAMPLE_MODES, runInMode } from "./support/live.js";
import { main, RECORDED_TURNS } from "./responses-reasoning.js";

describe.each(EXAMPLE_MODES)("examples/responses-reasoning (%s)", (mode) => {
  it("reaches 570 over the Responses API, printing the reasoning as it streamed and sending the reasoning items back", async () => {
    const lines: string[] = [];
    const { result: output, requests } = await runInMode(mode, RECORDED_TURNS, (options) => main({ ...options, log: (line) => lines.push(line) }));

    expect(output.status).toBe("succeeded");
    expect(output.finalAnswer).toBe("The final result is **570**.");
    expect(lines[0]).toMatch(mode === "offline" ? /^offline: a real gpt-5\.1-codex-max run/ : /^live: OpenAI-compatible endpoint http:\/\/127\.0\.0\.1:\d+\/v1 \(Responses API\), model gpt-5\.1-codex-max$/);
    expect(lines[1]).toMatch(/^thinking: \*\*Calculating step-by-step using calculator\*\* I'll compute 12 plus 7/);
    expect(lines.slice(2, 5)).toEqual(["calculator → 19", "calculator → 57", "calculator → 570"]);
    expect(lines).toContain("reasoning items kept in the conversation: 1");
    expect(lines.at(-1)).toBe("tokens: 1006 (reasoning 0, cached prompt 0)");
    if (mode === "live") {
      // The run's three later requests each carry the first reply's reasoning item, encrypted content and all.
      expect(requests!.map((request) => request.path)).toEqual(Array(4).fill("/v1/responses"));
      for (const request of requests!.slice(1)) {
        const items = (request.body as { input: { type?: string; encrypted_content?: string }[] }).input.filter((item) => item.type === "reasoning");
        expect(items).toHaveLength(1);
        expect(items[0]!.encrypted_content).toMatch(/^gAAAAAB/);
      }
      expect(requests![0]!.body).toMatchObject({ reasoning: { effort: "high", summary: "detailed" }, include: ["reasoning.encrypted_content"], store: false });
    }
  });
});
