import { describe, expect, it } from "vitest";
import { readCompletion } from "../../actors/openai/completion-read.js";
import { ChunkSchema, CompletionSchema } from "../../actors/openai/openai-wire-schemas.js";
import { StreamMerger } from "../../actors/openai/stream-merge.js";

/** Cases no recording covers, found in servers' code or issue trackers. */
function merge(chunks: unknown[]) {
  const deltas: string[] = [];
  const merger = new StreamMerger((delta) => deltas.push(delta));
  for (const chunk of chunks) merger.push(ChunkSchema.parse(chunk));
  return { turn: merger.finish(), deltas, merger };
}

const choice = (delta: unknown, finish_reason: string | null = null, index = 0) => ({ choices: [{ index, delta, finish_reason }] });

describe("StreamMerger", () => {
  it("mints an id for a streamed call that never got one, and keeps calls in index order", () => {
    const { turn } = merge([
      choice({ tool_calls: [{ index: 2, function: { name: "b", arguments: "{}" } }] }),
      choice({ tool_calls: [{ index: 0, id: "call_a", function: { name: "a", arguments: '{"x":' } }] }),
      choice({ tool_calls: [{ index: 0, function: { arguments: "1}" } }] }, "tool_calls"),
    ]);
    expect(turn.toolCalls[0]).toEqual({ id: "call_a", name: "a", arguments: '{"x":1}' });
    expect(turn.toolCalls[1]!.name).toBe("b");
    expect(turn.toolCalls[1]!.id).toMatch(/^call_[A-Za-z0-9]{24}$/);
  });

  it("follows calls by id when a server sends no index", () => {
    const { turn } = merge([
      choice({ tool_calls: [{ id: "c1", function: { name: "one", arguments: '{"a"' } }] }),
      choice({ tool_calls: [{ function: { arguments: ":1}" } }] }),
      choice({ tool_calls: [{ id: "c2", function: { name: "two", arguments: { b: 2 } } }] }, "tool_calls"),
    ]);
    expect(turn.toolCalls).toEqual([
      { id: "c1", name: "one", arguments: '{"a":1}' },
      // Arguments sent as an object are kept as JSON text.
      { id: "c2", name: "two", arguments: '{"b":2}' },
    ]);
  });

  it("turns empty arguments into {} and drops slots that never got anything", () => {
    const { turn } = merge([
      choice({ tool_calls: [{ index: 0, id: "c", function: { name: "noargs", arguments: "" } }] }),
      choice({ tool_calls: [{ index: 1, id: "", function: { name: "", arguments: "" } }] }, "tool_calls"),
    ]);
    expect(turn.toolCalls).toEqual([{ id: "c", name: "noargs", arguments: "{}" }]);
  });

  it("counts tool-call deltas as output that reached the caller, but not reasoning", () => {
    const reasoning = merge([choice({ reasoning_content: "hmm" })]);
    expect(reasoning.merger.delivered).toBe(false);
    const tool = merge([choice({ tool_calls: [{ index: 0, id: "c", function: { name: "n" } }] })]);
    expect(tool.merger.delivered).toBe(true);
  });

  it("rejects a chunk with a field of the wrong type", () => {
    expect(ChunkSchema.safeParse(choice({ content: 42 })).success).toBe(false);
  });
});

describe("readCompletion", () => {
  it("returns undefined when there is no choice", () => {
    expect(readCompletion(CompletionSchema.parse({ choices: [] }))).toBeUndefined();
  });

  it("reads a refusal and flags missing usage", () => {
    const turn = readCompletion(
      CompletionSchema.parse({ choices: [{ index: 0, message: { content: null, refusal: "No." }, finish_reason: "stop" }] }),
    );
    expect(turn).toMatchObject({ content: "", refusal: "No.", usageMissing: true, finishReason: "stop" });
  });
});
