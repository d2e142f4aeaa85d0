import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import type { ContextBuilder } from "../../actors/context-builder.js";
import { fromWireMessages } from "../../actors/openai/openai-wire.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { runAgent } from "../../machines/runner.js";
import { defineTool } from "../../tools/tool.js";
import { replies } from "../../testing/openai-server.js";
import { loadRecording, replayInteractions } from "../../testing/recordings.js";
import { bodies, clientFor, closeServers, fixture, serve } from "./harness.js";

/*
 * Whole recorded agent runs (pydantic-ai cassettes), driven end to end through our statechart:
 * the server replays the recorded responses; our machine runs the tools; the requests our
 * client sends must carry the same conversation, tool results in the recorded order, as the
 * requests the recording client sent.
 */

afterEach(closeServers);

/** The cassettes' runs had no system prompt: send the history as it is, so requests compare 1:1. */
const historyOnly: ContextBuilder = (input) => [...input.messages];

/** Message lists compared on meaning: an assistant turn's absent `content` is the same as null. */
function normalizeMessages(messages: unknown): unknown[] {
  return (messages as Record<string, unknown>[]).map((message) =>
    message["role"] === "assistant" && message["content"] === undefined ? { ...message, content: null } : message,
  );
}

function recordedRequests(path: string): Record<string, unknown>[] {
  return loadRecording(path).interactions.map((interaction) => interaction.request as Record<string, unknown>);
}

describe("recorded multi-turn agent runs through createReactMachine", () => {
  it("test_run_stream_sync_streams_real_model: tool call, tool result, answer", async () => {
    const path = fixture("pydantic-ai/test_openai/test_run_stream_sync_streams_real_model.yaml");
    const recording = loadRecording(path);
    const server = await serve(replayInteractions(recording.interactions));
    const calls: unknown[] = [];
    const getCapital = defineTool({
      name: "get_capital",
      description: "The capital city of a country.",
      parameters: z.object({ country: z.string() }),
      execute: (args) => {
        calls.push(args);
        return args.country === "UK" ? "London" : "unknown";
      },
    });
    const machine = createReactMachine({
      modelClient: clientFor(server, { model: "gpt-4o-mini" }),
      tools: [getCapital],
      contextBuilder: historyOnly,
      config: { toolChoice: "auto" },
    });
    const recorded = recordedRequests(path);
    const output = await runAgent(machine, { messages: fromWireMessages(recorded[0]!["messages"]) });

    expect(output.status).toBe("succeeded");
    expect(output.finalAnswer).toBe("The capital of the UK is London.");
    expect(output.rounds).toBe(2);
    expect(calls).toEqual([{ country: "UK" }]);
    // Usage of both calls, summed: (53 + 78) prompt, (15 + 9) completion, (68 + 87) total.
    expect(output.usage).toEqual({ promptTokens: 131, completionTokens: 24, totalTokens: 155, reasoningTokens: 0, cachedPromptTokens: 0 });

    const sent = bodies(server);
    expect(sent).toHaveLength(2);
    sent.forEach((body, i) => {
      expect(normalizeMessages(body["messages"])).toEqual(normalizeMessages(recorded[i]!["messages"]));
      expect(body["model"]).toBe("gpt-4o-mini");
      expect(body["stream"]).toBe(true);
      expect(body["stream_options"]).toEqual({ include_usage: true });
      expect((body["tools"] as { function: { name: string } }[]).map((t) => t.function.name)).toEqual(["get_capital"]);
    });
    // toolChoice is a first-round setting (contract section 3); pydantic-ai repeated it every round.
    expect(sent[0]!["tool_choice"]).toBe("auto");
    expect(sent[1]).not.toHaveProperty("tool_choice");
  });

  it("test_complex_agent_run: parallel calls, a second round, then the output tool ends the run", async () => {
    const path = fixture("pydantic-ai/test_temporal/test_complex_agent_run.yaml");
    const recording = loadRecording(path);
    const server = await serve(replayInteractions(recording.interactions));
    const ran: string[] = [];
    const noArgs = z.object({});
    const tools = [
      defineTool({ name: "get_country", description: "The user's country.", parameters: noArgs, parallelSafe: true, execute: () => (ran.push("get_country"), "Mexico") }),
      defineTool({
        name: "get_product_name",
        description: "The product's name.",
        parameters: noArgs,
        parallelSafe: true,
        execute: () => (ran.push("get_product_name"), "Pydantic AI"),
      }),
      defineTool({
        name: "get_weather",
        description: "The weather in a city.",
        parameters: z.object({ city: z.string() }),
        execute: (args) => (ran.push(`get_weather(${args.city})`), "sunny"),
      }),
      defineTool({
        name: "final_result",
        description: "The structured final answer.",
        parameters: z.object({ answers: z.array(z.object({ label: z.string(), answer: z.string() })) }),
        returnDirect: true,
        execute: (args) => (ran.push("final_result"), args.answers.map((a) => `${a.label}: ${a.answer}`).join("\n")),
      }),
    ];
    const machine = createReactMachine({
      modelClient: clientFor(server, { model: "gpt-4o" }),
      tools,
      contextBuilder: historyOnly,
      config: { toolChoice: "required" },
    });
    const recorded = recordedRequests(path);
    const output = await runAgent(machine, { messages: fromWireMessages(recorded[0]!["messages"]) });

    expect(output.status).toBe("succeeded");
    expect(output.finalAnswer).toBe(
      [
        "Capital: The capital of Mexico is Mexico City.",
        "Weather: The weather in Mexico City is currently sunny.",
        "Product Name: The product name is Pydantic AI.",
      ].join("\n"),
    );
    expect(ran.slice(2)).toEqual(["get_weather(Mexico City)", "final_result"]);
    expect(ran.slice(0, 2).sort()).toEqual(["get_country", "get_product_name"]);
    expect(output.rounds).toBe(3);
    expect(output.usage).toEqual({ promptTokens: 364 + 423 + 448, completionTokens: 40 + 15 + 62, totalTokens: 404 + 438 + 510, reasoningTokens: 0, cachedPromptTokens: 0 });

    const sent = bodies(server);
    expect(sent).toHaveLength(3);
    // Request N+1 carries the assistant's calls and the tool results, in the recorded order.
    sent.forEach((body, i) => expect(normalizeMessages(body["messages"])).toEqual(normalizeMessages(recorded[i]!["messages"])));
    expect(sent.map((body) => body["tool_choice"])).toEqual(["required", undefined, undefined]);
    // The output tool's result is the answer: the last message is its tool message, no 4th request.
    expect(output.messages.at(-1)).toMatchObject({ role: "tool", toolCallId: "call_CCGIWaMeYWmxOQ91orkmTvzn" });
  });

  it("when every endpoint fails the run ends Failed with reason modelError, the error kept", async () => {
    const primary = await serve(() => replies.error(503, "primary overloaded"));
    const fallback = await serve(() => loadRecording(fixture("vercel-ai/openai/reasoning-model-legacy-parameter-error.json")).interactions[0]!.reply);
    const machine = createReactMachine({
      modelClient: clientFor(primary, { fallbacks: [{ baseURL: fallback.baseURL, model: "o3-mini" }] }),
      config: { resilience: { maxRetries: 1, initialDelayMs: 1, maxDelayMs: 5, backoffMultiplier: 2, jitter: 0, retryOn: ["server_error"], fallbacks: [{ baseURL: fallback.baseURL, model: "o3-mini" }] } },
    });
    const output = await runAgent(machine, { messages: [{ role: "user", content: "hi" }] });
    expect(output.status).toBe("failed");
    expect(output.termination?.reason).toBe("modelError");
    expect(output.termination?.error).toMatchObject({ name: "ModelError", kind: "http", status: 400, model: "o3-mini", endpoint: fallback.baseURL });
    expect(output.termination?.error?.message).toContain(`1) ${primary.baseURL} (model test-model): HTTP 503: primary overloaded (after 2 attempts)`);
    expect(output.termination?.error?.message).toContain(`2) ${fallback.baseURL} (model o3-mini): HTTP 400: Unsupported parameter`);
    expect(primary.requests).toHaveLength(2);
    expect(fallback.requests).toHaveLength(1);
  });
});
