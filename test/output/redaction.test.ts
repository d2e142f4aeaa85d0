import { describe, expect, it } from "vitest";
import { createRedactor } from "../../visualize/redact.js";

describe("structured output in recordings and the inspector", () => {
  it("leaves out a streamed partial output and the raw output text when text is omitted", () => {
    const redact = createRedactor({ omitText: true });
    const emitted = { type: "output.partial", partial: { city: "Bergen", advice: "secret plans" } };
    expect(redact(emitted)).toEqual({ type: "output.partial", partial: "‹omitted tool arguments›" });
    const loop = { output: { status: "invalid", raw: '{"city":"Bergen"}', error: "temperatureC: required" }, termination: { reason: "invalidOutput", raw: "{}" } };
    expect(JSON.stringify(redact(loop))).not.toContain("Bergen");
  });
});
