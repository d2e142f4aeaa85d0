import { readUIMessageStream, uiMessageChunkSchema, type UIMessage, type UIMessageChunk } from "ai";
import { describe, expect, it } from "vitest";
import type { RunEvent } from "../../web/protocol.js";
import { UIChunkTranslator, type UIChunk } from "../../web/server/ui-message-chunks.js";

/**
 * The translation's paths the end-to-end tests (ai-sdk-chat.test.ts) do not reach with the
 * payments agent, each checked by the `ai` package itself: every chunk against its schema, and the
 * whole stream built into a message by `readUIMessageStream`, which throws on a chunk out of order.
 * Run on AI SDK 6 and again on AI SDK 7's schema and reader (vitest.config.ts's two projects).
 */
async function messageOf(chunks: readonly UIChunk[]): Promise<UIMessage> {
  const schema = uiMessageChunkSchema();
  for (const chunk of chunks) expect((await schema.validate!(chunk)).success, JSON.stringify(chunk)).toBe(true);
  const stream = new ReadableStream<UIMessageChunk>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk as UIMessageChunk);
      controller.close();
    },
  });
  let message: UIMessage | undefined;
  for await (const next of readUIMessageStream({ stream, terminateOnError: true })) message = next;
  return message!;
}

const start: UIChunk = { type: "start", messageId: "run-1", messageMetadata: { runId: "run-1" } };
const translate = (translator: UIChunkTranslator, events: RunEvent[]) => events.flatMap((event) => translator.translate(event));

describe("run events as UI message chunks", () => {
  it("a reply that did not stream comes whole; a call a guard refused is an error with its reason; the input is not repeated", async () => {
    const translator = new UIChunkTranslator({ runId: "run-1", inputMessages: 1 });
    const chunks = translate(translator, [
      { type: "message", data: { index: 0, message: { role: "user", content: "Delete the logs." } } },
      { type: "reply.started", data: { round: 1 } },
      { type: "message", data: { index: 1, message: { role: "assistant", content: "I will try.", toolCalls: [{ id: "c1", name: "rm", arguments: '{"path":"/var/log"}' }] } } },
      { type: "tool.call.denied", data: { callId: "c1", name: "rm", reason: "rm is not allowed" } },
      { type: "reply.started", data: { round: 2 } },
      { type: "message", data: { index: 3, message: { role: "assistant", content: "I may not delete them." } } },
      { type: "run.finished", data: { output: { status: "succeeded", finalAnswer: "I may not delete them.", rounds: 2, iterations: 2, usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2 }, toolEffects: [] } } },
    ]);
    const message = await messageOf([start, ...chunks]);
    expect(message.parts.map((part) => part.type)).toEqual(["step-start", "text", "tool-rm", "step-start", "text"]);
    expect(message.parts[1]).toMatchObject({ text: "I will try.", state: "done" });
    expect(message.parts[2]).toMatchObject({ state: "output-error", input: { path: "/var/log" }, errorText: "denied: rm is not allowed" });
    expect(JSON.stringify(chunks)).not.toContain("Delete the logs.");
    expect(chunks.at(-1)).toMatchObject({ type: "finish", finishReason: "stop" });
    expect(translator.translate({ type: "text.delta", data: { delta: "late" } })).toEqual([]);
  });

  it("a tool call started without a message first (a nested agent's delegation) is announced before its output; a machine error ends the message", async () => {
    const translator = new UIChunkTranslator({ runId: "run-1", inputMessages: 0 });
    const chunks = translate(translator, [
      { type: "reply.started", data: { round: 1 } },
      { type: "reasoning.delta", data: { delta: "Ask the researcher." } },
      { type: "tool.call.started", data: { callId: "c1", name: "researcher", arguments: "not json" } },
      { type: "tool.call.failed", data: { callId: "c1", name: "researcher", error: "it timed out", errorKind: "timeout" } },
      { type: "run.error", data: { message: "the machine failed" } },
    ]);
    expect(chunks.slice(-3)).toEqual([{ type: "error", errorText: "the machine failed" }, { type: "finish-step" }, { type: "finish", finishReason: "error" }]);
    // readUIMessageStream stops at the error chunk, as useChat does; the parts before it stand.
    const message = await messageOf([start, ...chunks.slice(0, -3)]);
    expect(message.parts.map((part) => part.type)).toEqual(["step-start", "reasoning", "tool-researcher"]);
    expect(message.parts[1]).toMatchObject({ text: "Ask the researcher.", state: "done" });
    expect(message.parts[2]).toMatchObject({ state: "output-error", input: "not json", errorText: "it timed out" });
  });

  it("the chart's state is one data part, replaced as the run moves; a stream cut short still finishes its message", async () => {
    const translator = new UIChunkTranslator({ runId: "run-1", inputMessages: 0 });
    const chunks = translate(translator, [
      { type: "state.changed", data: { value: "Initialising", path: "Initialising", status: "running" } },
      { type: "reply.started", data: { round: 1 } },
      { type: "state.changed", data: { value: { Evaluating: "ChildRunning" }, path: "Evaluating.ChildRunning.AgentLLM", status: "running" } },
      { type: "text.delta", data: { delta: "Hel" } },
      { type: "usage", data: { usage: { promptTokens: 3, completionTokens: 1, totalTokens: 4 } } },
    ]);
    chunks.push(...translator.finish("logClosed"));
    const message = await messageOf([start, ...chunks]);
    expect(message.parts.filter((part) => part.type === "data-jianmu-state")).toEqual([{ type: "data-jianmu-state", id: "run-1.state", data: { value: { Evaluating: "ChildRunning" }, path: "Evaluating.ChildRunning.AgentLLM", status: "running" } }]);
    expect(message.parts.find((part) => part.type === "text")).toMatchObject({ text: "Hel", state: "done" });
    expect(message.metadata).toEqual({ runId: "run-1", usage: { promptTokens: 3, completionTokens: 1, totalTokens: 4 } });
    expect(chunks.at(-1)).toEqual({ type: "finish", finishReason: "other" });
  });
});
