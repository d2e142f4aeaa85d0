import { replies } from "jianmu/testing";
import { callArguments, finalAnswer } from "./task.mjs";

/*
 * The scripted model's replies, as a real OpenAI-compatible server sends them: whole
 * `chat.completion` bodies, or `chat.completion.chunk` streams with tool-call arguments in
 * fragments, the final answer word by word and usage in a last `choices: []` chunk. The same
 * replies over the Responses API (`scriptedResponsesReply`): a whole `response` object, or its
 * event stream (`event:` lines, arguments in two fragments, the answer word by word,
 * `response.completed` with the output and usage).
 */

const CREATED = 1_717_000_000;
const usage = (round) => ({ prompt_tokens: 100 + 40 * round, completion_tokens: 20, total_tokens: 120 + 40 * round });

function toolCalls(task, round) {
  return Array.from({ length: task.p }, (_, index) => ({
    id: `call_${round}_${index}`,
    type: "function",
    function: { name: task.tool, arguments: JSON.stringify(callArguments(task, round, index)) },
  }));
}

function wholeReply(task, model, round) {
  const calls = round < task.k ? toolCalls(task, round) : [];
  const message = calls.length > 0 ? { role: "assistant", content: null, tool_calls: calls } : { role: "assistant", content: finalAnswer(task) };
  return replies.json({
    id: `chatcmpl-bench-${round}`,
    object: "chat.completion",
    created: CREATED,
    model,
    choices: [{ index: 0, message, finish_reason: calls.length > 0 ? "tool_calls" : "stop" }],
    usage: usage(round),
  });
}

function streamedReply(task, model, round) {
  const chunk = (delta, finish = null) => ({
    id: `chatcmpl-bench-${round}`,
    object: "chat.completion.chunk",
    created: CREATED,
    model,
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  const chunks = [chunk({ role: "assistant", content: null })];
  if (round < task.k) {
    toolCalls(task, round).forEach((call, index) => {
      const args = call.function.arguments;
      const half = Math.floor(args.length / 2);
      chunks.push(chunk({ tool_calls: [{ index, id: call.id, type: "function", function: { name: call.function.name, arguments: "" } }] }));
      chunks.push(chunk({ tool_calls: [{ index, function: { arguments: args.slice(0, half) } }] }));
      chunks.push(chunk({ tool_calls: [{ index, function: { arguments: args.slice(half) } }] }));
    });
    chunks.push(chunk({}, "tool_calls"));
  } else {
    // One delta per word, the way models stream text.
    for (const word of finalAnswer(task).split(/(?<= )/)) chunks.push(chunk({ content: word }));
    chunks.push(chunk({}, "stop"));
  }
  chunks.push({ id: `chatcmpl-bench-${round}`, object: "chat.completion.chunk", created: CREATED, model, choices: [], usage: usage(round) });
  return replies.sseFromChunks(chunks);
}

/** The Responses API's output items for `round`: its function calls, or the answer's message. */
function responsesOutput(task, round) {
  if (round >= task.k) return [{ id: `msg_${round}`, type: "message", status: "completed", role: "assistant", content: [{ type: "output_text", text: finalAnswer(task), annotations: [] }] }];
  return toolCalls(task, round).map((call, index) => ({
    id: `fc_${round}_${index}`,
    type: "function_call",
    status: "completed",
    call_id: call.id,
    name: call.function.name,
    arguments: call.function.arguments,
  }));
}

function responsesUsage(round) {
  const { prompt_tokens, completion_tokens, total_tokens } = usage(round);
  return { input_tokens: prompt_tokens, input_tokens_details: { cached_tokens: 0 }, output_tokens: completion_tokens, output_tokens_details: { reasoning_tokens: 0 }, total_tokens };
}

function responseObject(model, round, status, output, withUsage) {
  return { id: `resp_bench_${round}`, object: "response", created_at: CREATED, status, model, output, parallel_tool_calls: true, store: false, usage: withUsage ? responsesUsage(round) : null };
}

function streamedResponse(task, model, round) {
  const output = responsesOutput(task, round);
  const events = [{ type: "response.created", response: responseObject(model, round, "in_progress", [], false) }];
  output.forEach((item, output_index) => {
    if (item.type === "function_call") {
      events.push({ type: "response.output_item.added", output_index, item: { ...item, status: "in_progress", arguments: "" } });
      const half = Math.floor(item.arguments.length / 2);
      events.push({ type: "response.function_call_arguments.delta", item_id: item.id, output_index, delta: item.arguments.slice(0, half) });
      events.push({ type: "response.function_call_arguments.delta", item_id: item.id, output_index, delta: item.arguments.slice(half) });
    } else {
      events.push({ type: "response.output_item.added", output_index, item: { ...item, status: "in_progress", content: [] } });
      for (const word of finalAnswer(task).split(/(?<= )/)) events.push({ type: "response.output_text.delta", item_id: item.id, output_index, content_index: 0, delta: word });
    }
    events.push({ type: "response.output_item.done", output_index, item });
  });
  events.push({ type: "response.completed", response: responseObject(model, round, "completed", output, true) });
  return replies.sse(events.map((event, sequence_number) => `event: ${event.type}\ndata: ${JSON.stringify({ ...event, sequence_number })}\n\n`).join(""));
}

/** Replies are the same for every run of a task: build each once. */
const cache = new Map();

function cached(key, build) {
  let reply = cache.get(key);
  if (!reply) cache.set(key, (reply = build()));
  return reply;
}

export function scriptedReply(task, model, round, stream) {
  return cached(`chat\u0000${model}\u0000${round}\u0000${stream}`, () => (stream ? streamedReply(task, model, round) : wholeReply(task, model, round)));
}

export function scriptedResponsesReply(task, model, round, stream) {
  return cached(`responses\u0000${model}\u0000${round}\u0000${stream}`, () =>
    stream ? streamedResponse(task, model, round) : replies.json(responseObject(model, round, "completed", responsesOutput(task, round), true)),
  );
}

/** How many events of a paused answer go before its pause: the assistant's role, then the first word. */
export const EVENTS_BEFORE_PAUSE = 2;

/** The reply to a round (Chat Completions, or the Responses API), and for a paused task's streamed answer the index of the event the stream pauses before. */
export function replyFor(task, model, round, stream, responses = false) {
  const reply = (responses ? scriptedResponsesReply : scriptedReply)(task, model, round, stream);
  return task.pause !== undefined && stream && round >= task.k ? { reply, pauseBefore: EVENTS_BEFORE_PAUSE } : { reply };
}
