import { ModelError, type ModelCallOptions, type ModelClient, type ModelRequest, type ModelTurn } from "../actors/model-client.js";

/** One scripted assistant turn, or an Error the call throws. */
export type ScriptedResponse =
  | {
      content?: string;
      toolCalls?: { id?: string; name: string; arguments: Record<string, unknown> | string }[];
      usage?: { promptTokens: number; completionTokens: number };
      finishReason?: string;
      /** Milliseconds before the turn is answered (to test cancellation and ordering). */
      delayMs?: number;
    }
  | Error;

export interface ScriptedModel extends ModelClient {
  /** Every request received, in order, as the LLM step built it (deep-copied). */
  readonly requests: ModelRequest[];
  /** How many scripted responses have not been used yet. */
  readonly remaining: number;
}

function waitFor(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new ModelError("the model call was aborted", { kind: "aborted" }));
    const onAbort = () => {
      clearTimeout(timer);
      reject(new ModelError("the model call was aborted", { kind: "aborted" }));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * A `ModelClient` that answers from a script, for tests: each call takes the next response.
 * Text is reported as streamed `text.delta`s word by word, like a real streaming endpoint.
 * Running past the end of the script is a model error naming the request number.
 */
export function scriptedModel(responses: readonly ScriptedResponse[], options: { model?: string } = {}): ScriptedModel {
  const queue = [...responses];
  const requests: ModelRequest[] = [];
  const model = options.model ?? "scripted";
  return {
    description: `scripted model (${responses.length} responses)`,
    requests,
    get remaining() {
      return queue.length;
    },
    async complete(request: ModelRequest, callOptions: ModelCallOptions = {}): Promise<ModelTurn> {
      requests.push(structuredClone(request));
      const attempt = 1;
      const endpoint = "scripted";
      const emit = callOptions.onEvent ?? (() => undefined);
      const started = Date.now();
      emit({ type: "model.call.started", attempt, model, endpoint });
      const next = queue.shift();
      if (next === undefined || next instanceof Error) {
        const error =
          next ??
          new ModelError(`scriptedModel: no response left for request #${requests.length} (the script has ${responses.length})`, {
            kind: "script",
            model,
          });
        emit({ type: "model.call.failed", attempt, model, endpoint, message: error.message, willRetry: false, durationMs: Date.now() - started });
        throw error;
      }
      if (next.delayMs) await waitFor(next.delayMs, callOptions.signal);
      if (callOptions.signal?.aborted) throw new ModelError("the model call was aborted", { kind: "aborted" });
      const content = next.content ?? "";
      for (const piece of content.match(/\S+\s*|\s+/g) ?? []) emit({ type: "text.delta", delta: piece });
      const toolCalls = (next.toolCalls ?? []).map((call, index) => ({
        id: call.id ?? `call_scripted_${requests.length}_${index}`,
        name: call.name,
        arguments: typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments),
      }));
      const prompt = next.usage?.promptTokens ?? 0;
      const completion = next.usage?.completionTokens ?? 0;
      const usage = { promptTokens: prompt, completionTokens: completion, totalTokens: prompt + completion };
      const finishReason = next.finishReason ?? (toolCalls.length > 0 ? "tool_calls" : "stop");
      emit({ type: "model.call.completed", attempt, model, endpoint, usage, finishReason, durationMs: Date.now() - started });
      return { content, toolCalls, usage, finishReason, model };
    },
  };
}
