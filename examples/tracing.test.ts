import { describe, expect, it } from "vitest";
import { main } from "./tracing.js";

describe("examples/tracing", () => {
  it("prints the run as a tree of GenAI spans: the run, its model calls, the approval and the tools", async () => {
    const { output, spans, tree } = await main({ mode: "offline", log: () => {} });

    expect(output.status).toBe("succeeded");
    expect(output.finalAnswer).toContain("130.80 USD");
    expect(tree).toEqual([
      "invoke_agent ReActAgent  input_tokens=770 output_tokens=67 status=succeeded",
      "  chat gpt-4o-mini  input_tokens=210 output_tokens=22 finish_reasons=tool_calls",
      "  execute_tool convert_currency  id=call_convert_1 status=completed",
      "  chat gpt-4o-mini  input_tokens=260 output_tokens=28 finish_reasons=tool_calls",
      "  awaiting_approval  id=call_send_1 decision=approved",
      "  execute_tool send_message  id=call_send_1 status=completed",
      "  chat gpt-4o-mini  input_tokens=300 output_tokens=17 finish_reasons=stop",
    ]);
    // One trace, every span ended, and no key (the offline client's is "offline-example").
    expect(new Set(spans.map((span) => span.spanContext().traceId)).size).toBe(1);
    expect(spans.every((span) => span.ended)).toBe(true);
    expect(JSON.stringify(spans.map((span) => span.attributes))).not.toContain("offline-example");
  });
});
