import { describe, expect, it } from "vitest";
import { main } from "./composition.js";

describe("examples/composition", () => {
  it("asks a nested research agent, hands off to billing, and the refund's approval bubbles up from inside billing", async () => {
    const lines: string[] = [];
    const { output, asked, refunds, events } = await main({ mode: "offline", log: (line) => lines.push(line) });

    expect(output.status).toBe("succeeded");
    expect(output.finalAnswer).toBe("I refunded EUR 40 for order A-17; you will see it in 3 to 5 days.");
    // The refund waited inside Billing, which the help desk handed the conversation to.
    expect(asked).toEqual([expect.objectContaining({ callId: "call_refund", name: "issue_refund", agentPath: [{ agent: "Billing", callId: "call_billing" }] })]);
    expect(refunds).toEqual([{ order: "A-17", amountEur: 40 }]);
    // The research agent's tool call came out of the help desk with its path.
    expect(events.find((e) => e.type === "tool.call.started" && e.name === "lookup_order")?.agentPath).toEqual([{ agent: "Research", callId: "call_research" }]);
    expect(events.find((e) => e.type === "agent.handoff")).toMatchObject({ from: "HelpDesk", to: "Billing" });
    // The research agent's answer was the research call's result in the help desk's conversation.
    expect(output.messages.find((m) => m.role === "tool" && m.toolCallId === "call_research")?.content).toBe("Order A-17 (EUR 40) was delivered damaged on 2 May.");
    // Six model turns over HTTP; the help desk's usage holds all of them (scripted: 220 a tool-call turn, 230 a text turn).
    expect(output.usage.totalTokens).toBe(220 + 220 + (220 + 230) + (220 + 230));
    expect(lines.some((line) => line.startsWith("person asked (from Billing)"))).toBe(true);
  });
});
