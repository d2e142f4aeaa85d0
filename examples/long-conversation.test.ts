import { describe, expect, it } from "vitest";
import { main } from "./long-conversation.js";

describe("examples/long-conversation", () => {
  it("reads eight pages under a 500-token limit, then is made to summarize", async () => {
    const lines: string[] = [];
    const output = await main({ mode: "offline", log: (line) => lines.push(line) });

    expect(output.status).toBe("succeeded");
    expect(output.finalAnswer).toBe("Revenue grew everywhere; costs were flat.");
    const compactions = lines.filter((line) => line.startsWith("compacted:"));
    expect(compactions.length).toBeGreaterThan(0);
    for (const line of compactions) {
      const [, , beforeTokens, , afterTokens] = /compacted: (\d+) messages \((\d+) tokens\) -> (\d+) \((\d+)\)/.exec(line)!.map(Number);
      expect(afterTokens).toBeLessThan(beforeTokens!);
    }
    // The history kept is bounded: the task, plus at most what fits; never all eight pages.
    expect(output.messages.filter((m) => m.role === "tool" && m.name === "read_page").length).toBeLessThan(8);
    expect(output.messages[0]).toMatchObject({ role: "user" });
  });
});
