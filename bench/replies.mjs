import { replies } from "jianmu/testing";
import { callArguments, finalAnswer } from "./task.mjs";

/*
 * The scripted model's replies, as a real OpenAI-compatible server sends them: whole
 * `chat.completion` bodies, or `chat.completion.chunk` streams with tool-call arguments in
 * fragments, the final answer word by word and usage in a last `choices: []` chunk.
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

/** Replies are the same for every run of a task: build each once. */
const cache = new Map();

export function scriptedReply(task, model, round, stream) {
  const key = `${model}\u0000${round}\u0000${stream}`;
  let reply = cache.get(key);
  if (!reply) {
    reply = stream ? streamedReply(task, model, round) : wholeReply(task, model, round);
    cache.set(key, reply);
  }
  return reply;
}

/** How many events of a paused answer go before its pause: the assistant's role, then the first word. */
export const EVENTS_BEFORE_PAUSE = 2;

/** The reply to a round, and for a paused task's streamed answer the index of the event the stream pauses before. */
export function replyFor(task, model, round, stream) {
  const reply = scriptedReply(task, model, round, stream);
  return task.pause !== undefined && stream && round >= task.k ? { reply, pauseBefore: EVENTS_BEFORE_PAUSE } : { reply };
}
