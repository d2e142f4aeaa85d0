import { afterEach, describe, expect, it } from "vitest";
import { replies, startOpenAIServer, type OpenAIServer } from "../../testing.js";
import { main as minimal } from "../minimal.js";
import { connectModel } from "./endpoint.js";
import { scriptedTurns, textTurn, toolCallTurn } from "./turns.js";

/*
 * The two modes every example has. "Live" is exercised against a loopback server posing as the
 * user's endpoint (OPENAI_BASE_URL), so the test needs no key and no network.
 */

let endpointServer: OpenAIServer | undefined;
afterEach(async () => {
  await endpointServer?.close();
  endpointServer = undefined;
});

const unused = scriptedTurns([]);

describe("examples/support/endpoint: offline or live", () => {
  it("goes offline when neither OPENAI_API_KEY nor OPENAI_BASE_URL is set", async () => {
    const endpoint = await connectModel(unused, { env: { OPENAI_API_KEY: "  " } });
    try {
      expect(endpoint.mode).toBe("offline");
      expect(endpoint.server?.baseURL).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    } finally {
      await endpoint.close();
    }
  });

  it("mode 'offline' wins over a configured endpoint (the tests rely on it)", async () => {
    const endpoint = await connectModel(unused, { mode: "offline", env: { OPENAI_API_KEY: "sk-real-key" } });
    try {
      expect(endpoint.mode).toBe("offline");
    } finally {
      await endpoint.close();
    }
  });

  it("goes live with OPENAI_BASE_URL: the example's calls reach that endpoint with JIANMU_MODEL", async () => {
    const turns = [
      toolCallTurn([{ id: "call_1", name: "calculator", args: { expression: "25 * 4 + 10" } }]),
      textTurn("It is 110."),
    ];
    endpointServer = await startOpenAIServer({ respond: (request) => turns[request.index] ?? replies.error(500, "no more turns") });
    const lines: string[] = [];
    const output = await minimal({
      env: { OPENAI_BASE_URL: endpointServer.baseURL, JIANMU_MODEL: "llama3.1:8b" },
      log: (line) => lines.push(line),
    });

    expect(lines[0]).toBe(`live: OpenAI-compatible endpoint ${endpointServer.baseURL}, model llama3.1:8b`);
    expect(output.finalAnswer).toBe("It is 110.");
    expect(endpointServer.requests.map((request) => (request.body as { model: string }).model)).toEqual(["llama3.1:8b", "llama3.1:8b"]);
  });
});
