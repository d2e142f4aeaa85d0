import { readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import type { ContextBuilder } from "../../actors/context-builder.js";
import { human, type AssistantMessage } from "../../actors/messages.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { runAgent } from "../../machines/runner.js";
import { defineTool } from "../../tools/tool.js";
import { loadRecording, replayInteractions } from "../../testing/recordings.js";
import { bodies, clientFor, closeServers, fixture, serve } from "./harness.js";

/*
 * Whole recorded runs of the Responses API driven end to end through the statechart: the server
 * replays the recorded replies, the machine runs the tools, and the requests our client sends
 * must carry what the recording client sent back (pydantic-ai's cassettes keep those requests):
 * above all a reasoning model's reasoning items, unchanged, on the next round.
 */

afterEach(closeServers);

/** The recorded runs sent no system prompt in `input` (pydantic-ai uses `instructions`): send the history as it is. */
const historyOnly: ContextBuilder = (input) => [...input.messages];

type Item = Record<string, unknown>;

/** Recorded input items as we send them: a function call without its item id (nothing is stored server-side with `store: false`). */
function withoutCallItemIds(items: unknown): Item[] {
  return (items as Item[]).map((item) => {
    if (item["type"] !== "function_call") return item;
    const { id: _id, ...rest } = item;
    return rest;
  });
}

function recordedRequests(path: string): Item[] {
  return loadRecording(path).interactions.map((interaction) => interaction.request as Item);
}

describe("recorded Responses API runs through createReactMachine", () => {
  it("gpt-5 with reasoning (pydantic-ai): the reasoning item goes back on the next round exactly as the recording client sent it", async () => {
    const path = fixture("pydantic-ai/test_openai_responses/test_openai_responses_thinking_with_tool_calls.yaml");
    const server = await serve(replayInteractions(loadRecording(path).interactions));
    const plans: string[] = [];
    const updatePlan = defineTool({
      name: "update_plan",
      description: "Update the plan.",
      parameters: z.object({ plan: z.string() }),
      execute: ({ plan }) => (plans.push(plan), "plan updated"),
    });
    const recorded = recordedRequests(path);
    const machine = createReactMachine({
      modelClient: clientFor(server, { model: "gpt-5", api: "responses", stream: false, reasoning: { effort: "low", summary: "detailed" } }),
      tools: [updatePlan],
      contextBuilder: historyOnly,
      config: { toolChoice: "auto" },
    });
    const output = await runAgent(machine, { messages: [human((recorded[0]!["input"] as { content: string }[])[0]!.content)] });

    expect(output.status).toBe("succeeded");
    expect(output.finalAnswer).toMatch(/^Softly old fountains illumine alleys\n/);
    expect(plans).toHaveLength(1);
    // Both calls' usage, with the details: 1792 reasoning tokens in the first, 2048 cached prompt tokens in the second.
    expect(output.usage).toEqual({ promptTokens: 124 + 2087, completionTokens: 1926 + 124, totalTokens: 2050 + 2211, reasoningTokens: 1792, cachedPromptTokens: 2048 });

    const sent = bodies(server);
    expect(sent).toHaveLength(2);
    sent.forEach((body, i) => {
      expect(body["input"]).toEqual(withoutCallItemIds(recorded[i]!["input"]));
      expect(body["include"]).toEqual(["reasoning.encrypted_content"]);
      expect(body["reasoning"]).toEqual({ effort: "low", summary: "detailed" });
      expect(body["store"]).toBe(false);
      expect(body["tools"]).toEqual([{ type: "function", name: "update_plan", description: "Update the plan.", parameters: expect.any(Object), strict: false }]);
    });
    // The round trip itself, spelled out: request 2 carries the reasoning item of reply 1, encrypted content and all.
    const reasoning = (sent[1]!["input"] as Item[])[1]!;
    expect(reasoning).toMatchObject({ type: "reasoning", id: "rs_68c42d29124881968e24c1ca8c1fc7860e8bc41441c948f6", encrypted_content: expect.stringMatching(/^gAAAAABoxC0_/) });
    expect(reasoning["summary"]).toHaveLength(5);
    // In the conversation, the items sit on the assistant message that came with them.
    const assistant = output.messages.find((message): message is AssistantMessage => message.role === "assistant" && message.reasoningItems !== undefined);
    expect(assistant?.reasoningItems).toMatchObject({ api: "responses", endpoint: server.baseURL, model: "gpt-5", items: [{ id: "rs_68c42d29124881968e24c1ca8c1fc7860e8bc41441c948f6", after: 0 }] });
  });

  it("gpt-5.1-codex-max with store: false (vercel/ai): every later request carries the first reply's reasoning item with its encrypted content", async () => {
    const path = fixture("vercel-ai/openai-responses/openai-reasoning-encrypted-content.1.chunks.txt");
    const server = await serve(replayInteractions(loadRecording(path).interactions));
    const calculator = defineTool({
      name: "calculator",
      description: "A minimal calculator for basic arithmetic. Call it once per step.",
      parameters: z.object({ a: z.number(), b: z.number(), op: z.enum(["add", "subtract", "multiply", "divide"]) }),
      execute: ({ a, b, op }) => (op === "add" ? a + b : op === "subtract" ? a - b : op === "multiply" ? a * b : a / b),
    });
    const machine = createReactMachine({
      modelClient: clientFor(server, { model: "gpt-5.1-codex-max", api: "responses", reasoning: { effort: "high", summary: "detailed" } }),
      tools: [calculator],
      contextBuilder: historyOnly,
    });
    const lines = readFileSync(path, "utf8").split("\n").filter((line) => line !== "");
    const finalEncryptedContent = (JSON.parse(lines.find((line) => line.startsWith('{"type":"response.completed"'))!) as { response: { output: Item[] } }).response.output[0]!["encrypted_content"];
    const firstEncryptedContent = (JSON.parse(lines.find((line) => line.startsWith('{"type":"response.output_item.added"'))!) as { item: Item }).item["encrypted_content"];
    expect(finalEncryptedContent).not.toBe(firstEncryptedContent);
    const events: string[] = [];
    const output = await runAgent(machine, { messages: [human("Compute (12 + 7) * 3 * 10 step by step.")] }, { onEvent: (event) => void (event.type === "reasoning.delta" && events.push(event.delta)) });

    expect(output.status).toBe("succeeded");
    expect(output.finalAnswer).toBe("The final result is **570**.");
    expect(events.join("")).toMatch(/^\*\*Calculating step-by-step using calculator\*\*/);
    const sent = bodies(server);
    expect(sent).toHaveLength(4);
    for (const body of sent) expect(body).toMatchObject({ store: false, include: ["reasoning.encrypted_content"], stream: true });
    // From the second request on: user, reasoning (before the call it preceded), call, output, ...
    for (const body of sent.slice(1)) {
      const input = body["input"] as Item[];
      expect(input.slice(0, 4)).toEqual([
        { role: "user", content: "Compute (12 + 7) * 3 * 10 step by step." },
        {
          type: "reasoning",
          id: "rs_01830d662ab3856501693c321405c88190be3ab04d5782d5f9",
          summary: [{ type: "summary_text", text: expect.stringMatching(/^\*\*Calculating step-by-step using calculator\*\*/) }],
          // The finished item's: `output_item.added` carried an earlier blob, replaced when the item was done.
          encrypted_content: finalEncryptedContent,
        },
        { type: "function_call", call_id: "call_AB6AaRZ1FYZB2RwS6A5vbdqn", name: "calculator", arguments: '{"a":12,"b":7,"op":"add"}' },
        { type: "function_call_output", call_id: "call_AB6AaRZ1FYZB2RwS6A5vbdqn", output: "19" },
      ]);
      // Only the first reply had reasoning: exactly one reasoning item however long the run.
      expect(input.filter((item) => item["type"] === "reasoning")).toHaveLength(1);
    }
    expect((sent[3]!["input"] as Item[]).slice(4)).toEqual([
      { type: "function_call", call_id: "call_Q6pW65MUgW9vF59BmItYGos3", name: "calculator", arguments: '{"a":19,"b":3,"op":"multiply"}' },
      { type: "function_call_output", call_id: "call_Q6pW65MUgW9vF59BmItYGos3", output: "57" },
      { type: "function_call", call_id: "call_Zl5vIMnD7dVAjgU6FkhmiCZh", name: "calculator", arguments: '{"a":57,"b":10,"op":"multiply"}' },
      { type: "function_call_output", call_id: "call_Zl5vIMnD7dVAjgU6FkhmiCZh", output: "570" },
    ]);
  });

  it("gpt-4o streamed (pydantic-ai): the tool result answers the call's call_id, and a model without reasoning settings is not asked for encrypted reasoning", async () => {
    const path = fixture("pydantic-ai/test_openai_responses/test_openai_responses_stream.yaml");
    const server = await serve(replayInteractions(loadRecording(path).interactions));
    const getCapital = defineTool({
      name: "get_capital",
      description: "The capital city of a country.",
      parameters: z.object({ country: z.string() }),
      execute: ({ country }) => (country === "France" ? "Paris" : "unknown"),
    });
    const recorded = recordedRequests(path);
    const machine = createReactMachine({ modelClient: clientFor(server, { model: "gpt-4o", api: "responses" }), tools: [getCapital], contextBuilder: historyOnly, config: { toolChoice: "auto" } });
    const output = await runAgent(machine, { messages: [human("What is the capital of France?")] });

    expect(output.status).toBe("succeeded");
    expect(output.finalAnswer).toBe("The capital of France is Paris.");
    const sent = bodies(server);
    expect(sent[0]!["input"]).toEqual(recorded[0]!["input"]);
    // pydantic-ai (March 2025) answered with the item id (`fc_…`) as call_id; the API's own is `call_…`, and that is what we send.
    expect(sent[1]!["input"]).toEqual([
      { role: "user", content: "What is the capital of France?" },
      { type: "function_call", call_id: "call_kL0PCQV7M2WMoVX8V8OtYSAL", name: "get_capital", arguments: '{"country":"France"}' },
      { type: "function_call_output", call_id: "call_kL0PCQV7M2WMoVX8V8OtYSAL", output: "Paris" },
    ]);
    expect((recorded[1]!["input"] as Item[])[1]).toMatchObject({ call_id: "fc_67e554a1de488191af0831d35cbe082e0794405d35281ae2" });
    for (const body of sent) {
      expect(body).not.toHaveProperty("include");
      expect(body).not.toHaveProperty("reasoning");
    }
    expect(sent.map((body) => body["tool_choice"])).toEqual(["auto", undefined]);
  });

  it("gpt-4o parallel calls, whole responses (pydantic-ai): both calls run, both outputs go back in call order", async () => {
    const path = fixture("pydantic-ai/test_openai_responses/test_openai_responses_model_retry.yaml");
    const server = await serve(replayInteractions(loadRecording(path).interactions));
    const getLocation = defineTool({
      name: "get_location",
      description: "Where a place is.",
      parameters: z.object({ loc_name: z.string() }),
      parallelSafe: true,
      execute: ({ loc_name }) => {
        if (loc_name !== "London") throw new Error('Wrong location, I only know about "London".');
        return '{"lat": 51, "lng": 0}';
      },
    });
    const recorded = recordedRequests(path);
    const machine = createReactMachine({ modelClient: clientFor(server, { model: "gpt-4o", api: "responses", stream: false }), tools: [getLocation], contextBuilder: historyOnly });
    const output = await runAgent(machine, { messages: [human("What is the location of Londos and London?")] });

    expect(output.status).toBe("succeeded");
    expect(output.finalAnswer).toMatch(/^It seems "Londos" might be incorrect or unknown\./);
    const input = bodies(server)[1]!["input"] as Item[];
    // The recording client also sent an empty assistant message and the call items' ids; the calls and their outputs match.
    const recordedItems = withoutCallItemIds(recorded[1]!["input"]).filter((item) => item["role"] !== "assistant");
    expect(input.map((item) => [item["type"] ?? item["role"], item["call_id"]])).toEqual(recordedItems.map((item) => [item["type"] ?? item["role"], item["call_id"]]));
    expect(input.filter((item) => item["type"] === "function_call")).toEqual(recordedItems.filter((item) => item["type"] === "function_call"));
    expect(input.at(-2)).toMatchObject({ type: "function_call_output", call_id: "call_LWVp74L5HaH2KNvgVz9PJsrj", output: expect.stringContaining('Wrong location, I only know about "London".') });
    expect(input.at(-1)).toEqual({ type: "function_call_output", call_id: "call_YnRAWeTyxI91m5uNa5bxXwVO", output: '{"lat": 51, "lng": 0}' });
  });
});
