import { describe, expect, it } from "vitest";
import { replayRecording, startOpenAIServer } from "../testing.js";
import { main, RECORDING } from "./claude-ai-sdk.js";

describe("examples/claude-ai-sdk", () => {
  it("offline: the recorded Claude reply with extended thinking, through fromAiSdk", async () => {
    const lines: string[] = [];
    const output = await main({ env: {}, log: (line) => lines.push(line) });
    expect(output.status).toBe("succeeded");
    expect(output.finalAnswer).toBe("925 ÷ 5 = 185");
    expect(lines[0]).toMatch(/^offline: a real claude-sonnet-4-5 reply/);
    expect(lines[1]).toBe("thinking: The previous result was 925. Now I need to divide that by 5. 925 ÷ 5 = 185");
    expect(lines.at(-1)).toBe("tokens: 69 in, 53 out");
  });

  it("live: ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL send the same code to a Messages API endpoint (here a loopback one)", async () => {
    const server = await startOpenAIServer({ respond: replayRecording(RECORDING) });
    try {
      const lines: string[] = [];
      const output = await main({ env: { ANTHROPIC_API_KEY: "sk-ant-live", ANTHROPIC_BASE_URL: server.baseURL }, log: (line) => lines.push(line) });
      expect(output.finalAnswer).toBe("925 ÷ 5 = 185");
      expect(lines[0]).toBe("live: AI SDK model anthropic.messages claude-sonnet-4-5");
      expect(server.requests).toHaveLength(1);
      expect(server.requests[0]!.headers["x-api-key"]).toBe("sk-ant-live");
      expect(server.requests[0]!.body).toMatchObject({ model: "claude-sonnet-4-5", thinking: { type: "enabled", budget_tokens: 1024 }, tools: [expect.objectContaining({ name: "calculator" })] });
    } finally {
      await server.close();
    }
  });
});
