import { afterEach, describe, expect, it } from "vitest";
import { human } from "../../actors/messages.js";
import { resolveModelClient } from "../../actors/openai/openai-model-client.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { runAgent } from "../../machines/runner.js";
import { replies, startOpenAIServer, type OpenAIServer } from "../../testing/openai-server.js";
import { multiply } from "./helpers.js";

const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
  id: "c",
  object: "chat.completion.chunk",
  created: 1,
  model: "m",
  choices: [{ index: 0, delta, finish_reason: finish }],
});

let server: OpenAIServer | undefined;
afterEach(() => server?.close());

describe("toolChoice across a retried first round", () => {
  it("is sent on request 1 and on its retry, never on round 2", async () => {
    const turns = [
      replies.error(500, "upstream hiccup"),
      replies.sseFromChunks([
        chunk({ role: "assistant", tool_calls: [{ index: 0, id: "call_a", type: "function", function: { name: "multiply", arguments: '{"a":3,"b":4}' } }] }),
        chunk({}, "tool_calls"),
      ]),
      replies.sseFromChunks([chunk({ role: "assistant", content: "12" }), chunk({}, "stop")]),
    ];
    server = await startOpenAIServer({ respond: (request) => turns[request.index] ?? replies.error(500, "no more turns") });
    const modelClient = resolveModelClient({
      baseURL: server.baseURL,
      apiKey: "test-key",
      model: "m",
      resilience: { initialDelayMs: 1, jitter: 0 },
    });
    const machine = createReactMachine({ modelClient, tools: [multiply], config: { toolChoice: "required" } });
    const output = await runAgent(machine, { messages: [human("3*4")] });

    expect(output.status).toBe("succeeded");
    expect(output.finalAnswer).toBe("12");
    const bodies = server.requests.map((request) => request.body as Record<string, unknown>);
    expect(bodies).toHaveLength(3);
    expect(bodies.map((body) => body["tool_choice"])).toEqual(["required", "required", undefined]);
    // The retry is the same logical call: identical messages.
    expect(bodies[1]!["messages"]).toEqual(bodies[0]!["messages"]);
  });
});
