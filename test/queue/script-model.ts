import { startOpenAIServer, replies, type OpenAIServer, type ReceivedRequest } from "../../testing/openai-server.js";

/**
 * What one run does, written into its first user message: the tool calls to make, one per model
 * turn, then the answer. The loopback server reads it back from every request, so any worker
 * process continuing the run gets the same next turn: the model is a pure function of the conversation.
 */
export interface RunScript {
  /** `id`: the call id the model gives (default `call_<n>`). */
  calls: { name: "record" | "pay"; note: string; sleepMs?: number; id?: string }[];
  answer: string;
  /** The model takes this long on every turn (a run to kill mid-model-call). */
  modelDelayMs?: number;
}

export function scriptMessage(script: RunScript): { role: "user"; content: string } {
  return { role: "user", content: `SCRIPT ${JSON.stringify(script)}` };
}

interface WireMessage {
  role: string;
  content?: string | { type: string; text?: string }[] | null;
}

/** A message's text: the string, or its text parts (a task sent with an image). */
function textOf(content: WireMessage["content"]): string {
  return typeof content === "string" ? content : (content ?? []).map((part) => part.text ?? "").join("\n");
}

function turnFor(request: ReceivedRequest) {
  const messages = ((request.body as { messages?: WireMessage[] }).messages ?? []) as WireMessage[];
  const scriptText = messages.map((m) => (m.role === "user" ? textOf(m.content) : "")).find((text) => text.startsWith("SCRIPT "));
  const script = scriptText ? (JSON.parse(scriptText.slice("SCRIPT ".length)) as RunScript) : { calls: [], answer: "no script" };
  const done = messages.filter((m) => m.role === "tool").length;
  const next = script.calls[done];
  const message = next
    ? { role: "assistant", content: null, tool_calls: [{ id: next.id ?? `call_${done}`, type: "function", function: { name: next.name, arguments: JSON.stringify({ note: next.note, ...(next.sleepMs ? { sleepMs: next.sleepMs } : {}) }) } }] }
    : { role: "assistant", content: script.answer };
  return {
    delayMs: script.modelDelayMs ?? 0,
    body: {
      id: `chatcmpl-${request.index}`,
      object: "chat.completion",
      created: 1_700_000_000,
      model: "scripted",
      choices: [{ index: 0, message, finish_reason: next ? "tool_calls" : "stop" }],
      usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
    },
  };
}

/** The loopback OpenAI-compatible server answering every run from its script. */
export function startScriptServer(): Promise<OpenAIServer> {
  return startOpenAIServer({
    respond: async (request) => {
      const turn = turnFor(request);
      if (turn.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, turn.delayMs));
      return replies.json(turn.body);
    },
  });
}
