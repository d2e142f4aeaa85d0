// The queue bench's instant model: a run's script rides in its first user message (as in the tests),
// and each request is answered at once with the script's next tool call or its answer.

/** The input of a run whose model calls `record` once per note (`calls` times), then answers. */
export const script = (id, calls = 1) => ({
  messages: [{ role: "user", content: `SCRIPT ${JSON.stringify({ calls: Array.from({ length: calls }, (_, k) => ({ name: "record", note: `${id}:${k}` })), answer: "ok" })}` }],
});

/**
 * A `respond` for `startOpenAIServer`. `onFirstCall(answer)` hears each run's first model call (by its
 * script's answer), before it is answered.
 */
export function scriptedModel(replies, onFirstCall = () => undefined) {
  return (request) => {
    const messages = request.body.messages ?? [];
    const script = JSON.parse(messages.find((m) => m.role === "user")?.content.slice("SCRIPT ".length) ?? '{"calls":[],"answer":"x"}');
    const done = messages.filter((m) => m.role === "tool").length;
    if (done === 0) onFirstCall(script.answer);
    const next = script.calls[done];
    const message = next
      ? { role: "assistant", content: null, tool_calls: [{ id: `call_${done}`, type: "function", function: { name: next.name, arguments: JSON.stringify({ note: next.note }) } }] }
      : { role: "assistant", content: script.answer };
    return replies.json({ id: "c", object: "chat.completion", created: 1, model: "m", choices: [{ index: 0, message, finish_reason: next ? "tool_calls" : "stop" }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } });
  };
}
