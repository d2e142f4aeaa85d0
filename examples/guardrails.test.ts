import { describe, expect, it } from "vitest";
import { textOf } from "../index.js";
import { EXAMPLE_MODES, runInMode } from "./support/live.js";
import { failedRun } from "./support/outcome.js";
import { JUDGE_MODEL, main, OFFLINE_TURNS } from "./guardrails.js";


describe.each(EXAMPLE_MODES)("examples/guardrails (%s)", (mode) => {
  it("the cheap judge sends the over-promising answer back with its reason; the corrected answer passes", async () => {
    const lines: string[] = [];
    const { result: output, requests } = await runInMode(mode, OFFLINE_TURNS, (options) => main({ ...options, log: (line) => lines.push(line) }));

    expect(output.status).toBe("succeeded");
    expect(output.finalAnswer).toContain("store credit");
    // Two answers: the judge's retry is an iteration, and its reason reached the agent as feedback.
    expect(output.rounds).toBe(2);
    const feedback = output.messages.filter((message) => message.role === "user").at(-1);
    expect(feedback && textOf(feedback.content)).toContain("only store credit after 30 days");
    expect(lines.filter((line) => line.startsWith("judge: "))).toEqual([expect.stringMatching(/^judge: FAIL/), "judge: PASS"]);
    // The judge's two calls (through ctx.budgeted) count in the run's usage beside the agent's two: 230 tokens a turn.
    expect(output.usage.totalTokens).toBe(4 * 230);
    if (mode === "live") {
      // Live, the calls really went out in turn: the agent's model, the judge's cheap one, and again.
      const models = requests!.map((request) => (request.body as { model?: string }).model);
      expect(models).toEqual(["gpt-4o-mini", JUDGE_MODEL, "gpt-4o-mini", JUDGE_MODEL]);
      // The judge saw the answer it judged, and was held to a short reply.
      expect(requests![1]!.rawBody).toContain("refund the full price");
      expect((requests![1]!.body as { max_tokens?: number; max_completion_tokens?: number }).max_completion_tokens ?? (requests![1]!.body as { max_tokens?: number }).max_tokens).toBe(80);
    }
  });

  it("the input guardrail refuses a message with a card number before any model call", async () => {
    const lines: string[] = [];
    const { result: output, requests } = await runInMode(mode, OFFLINE_TURNS, (options) =>
      failedRun(main({ ...options, question: "My card number is 4111 1111 1111 1111, refund me", log: (line) => lines.push(line) })),
    );
    expect(output.termination).toMatchObject({ reason: "guardrailTripped", guardrail: "no-card-numbers" });
    expect(output.rounds).toBe(0);
    if (mode === "live") expect(requests).toEqual([]);
    expect(lines.at(-1)).toMatch(/^the run failed \(guardrailTripped\): no-card-numbers: /);
  });
});
