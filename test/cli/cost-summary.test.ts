import { describe, expect, it } from "vitest";
import { tokenSummary } from "../../cli/progress.js";

/** Issue 33, point 2: the CLI's summary line says what the run cost, or that it is not known. */
describe("the CLI's usage summary", () => {
  const usage = { promptTokens: 300, completionTokens: 15, totalTokens: 315 };

  it("says nothing of cost without config.pricing", () => {
    expect(tokenSummary(usage)).toBe("315 tokens (prompt 300, completion 15)");
  });

  it("gives the cost with four significant digits, or says it is unknown", () => {
    expect(tokenSummary({ ...usage, cost: 0.000330123 })).toBe("315 tokens (prompt 300, completion 15), cost 0.0003301");
    expect(tokenSummary({ ...usage, cost: null })).toBe("315 tokens (prompt 300, completion 15), cost unknown (a model has no price in pricing)");
  });
});
