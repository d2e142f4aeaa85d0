import type OpenAI from "openai";
import type { ChatCompletionCreateParamsNonStreaming, ChatCompletionCreateParamsStreaming } from "openai/resources/chat/completions";
import type { Cancellation } from "../cancellation.js";
import type { ModelTurn } from "../model-client.js";
import { readCompletion } from "./completion-read.js";
import { AttemptError, classifyFailure } from "./model-failure.js";
import { describeWireIssue, parseChunk, parseCompletion } from "./openai-wire-schemas.js";
import { StreamMerger, type TurnParts } from "./stream-merge.js";

export interface AttemptInput {
  client: OpenAI;
  body: Record<string, unknown>;
  stream: boolean;
  timeoutMs: number;
  /** The model the turn is reported as (the target's, which may be a fallback). */
  model: string;
  /** The caller's cancellation; cancelling cancels the HTTP request at once. */
  cancellation?: Cancellation | undefined;
  onText: (delta: string) => void;
  onToolArguments?: ((call: { index: number; name: string; arguments: string }) => void) | undefined;
}

/**
 * One HTTP request through the SDK, with its own AbortController: the caller's cancellation and the
 * attempt's timer both abort it, and it is released when the attempt ends. (A fresh controller per
 * request matters: the SDK adds an abort listener to whatever signal it is given and never removes
 * it, so handing it a long-lived signal would leak one listener per request. It is a real one: the
 * SDK's contract takes an AbortSignal, and anything that only looks like one would work only as long
 * as the SDK never hands it on to `fetch`.)
 * The timeout covers the whole attempt, streamed body included, not just the response headers.
 */
export async function attemptCompletion(input: AttemptInput): Promise<ModelTurn> {
  const { cancellation } = input;
  const controller = new AbortController();
  let abortReason: "caller" | "timeout" | undefined;
  const onCallerAbort = () => {
    abortReason ??= "caller";
    controller.abort();
  };
  const timer = setTimeout(() => {
    abortReason ??= "timeout";
    controller.abort();
  }, input.timeoutMs);
  let stopListening: (() => void) | undefined;
  if (cancellation) {
    if (cancellation.aborted) onCallerAbort();
    else stopListening = cancellation.onAbort(onCallerAbort);
  }
  // Only a stream needs one (a whole answer is read in one piece), so only a stream makes one.
  let merger: StreamMerger | undefined;
  // Set once the whole body has been read: aborting then would only cost (each abort builds
  // DOMExceptions in the SDK and in fetch) and free nothing.
  let bodyRead = false;
  try {
    // The SDK must not retry on its own: retries, their events and the toolChoice rule are ours.
    const requestOptions = { signal: controller.signal, maxRetries: 0 };
    let parts: TurnParts;
    // The body is built by us (it may carry fields the SDK's types do not know, like `top_k`).
    if (input.stream) {
      merger = new StreamMerger(input.onText, input.onToolArguments);
      const body = input.body as unknown as ChatCompletionCreateParamsStreaming;
      const { data: stream, response } = await input.client.chat.completions.create(body, requestOptions).withResponse();
      try {
        for await (const raw of stream) {
          const chunk = parseChunk(raw);
          if (!chunk.success) throw invalidResponse(`a stream chunk is malformed: ${describeWireIssue(chunk.error)}`, merger.delivered);
          merger.push(chunk.data);
        }
      } catch (error) {
        // The SDK parses each event with JSON.parse: a SyntaxError is the server's fault (a cut or
        // plain-text line), not the connection's, and sending the same request again will not fix it.
        if (error instanceof SyntaxError) throw invalidResponse(`a stream chunk is not JSON (${error.message})`, merger.delivered, error);
        throw error;
      }
      // The SDK ends the iteration quietly when its request is aborted, so look at why it ended.
      if (abortReason !== undefined) throw new Error("aborted");
      // Not an event stream at all (a proxy's or a login page, with 200): the same request gets the same page.
      const contentType = response.headers.get("content-type") ?? "";
      if (merger.chunks === 0 && !contentType.includes("event-stream")) {
        throw invalidResponse(`the server answered ${contentType.split(";")[0] || "a body without a content type"}, not an event stream (is the base URL an OpenAI-compatible API?)`, false);
      }
      if (!merger.finished) {
        // A body that ends without a finish_reason was cut off (a proxy closed it cleanly).
        throw new AttemptError({
          category: "connection",
          kind: "stream",
          message:
            merger.chunks === 0 ? "the stream ended before any chunk arrived" : `the stream ended after ${merger.chunks} chunks without a finish_reason`,
          delivered: merger.delivered,
        });
      }
      bodyRead = true;
      parts = merger.finish();
    } else {
      const body = input.body as unknown as ChatCompletionCreateParamsNonStreaming;
      let raw: unknown;
      try {
        raw = await input.client.chat.completions.create(body, requestOptions);
      } catch (error) {
        // A JSON content type with a body that is not JSON (cut, or a proxy's page).
        if (error instanceof SyntaxError) throw invalidResponse(`the response is not JSON (${error.message})`, false, error);
        throw error;
      }
      bodyRead = true;
      const completion = parseCompletion(raw);
      if (!completion.success) throw invalidResponse(`the response is not a chat completion: ${describeWireIssue(completion.error)}`, false);
      const turn = readCompletion(completion.data);
      if (!turn) throw invalidResponse("the response has no choices", false);
      // A whole answer reaches the caller as one delta, so `streamingOutput` works either way.
      if (turn.content !== "") input.onText(turn.content);
      parts = turn;
    }
    // The parts are freshly made and ours: naming the model on them spares a copy of the turn.
    return Object.assign(parts, { model: input.model });
  } catch (error) {
    const delivered = merger?.delivered ?? false;
    const context = abortReason === undefined ? { timeoutMs: input.timeoutMs, delivered } : { timeoutMs: input.timeoutMs, delivered, abortReason };
    throw new AttemptError(classifyFailure(error, context));
  } finally {
    clearTimeout(timer);
    stopListening?.();
    // Frees the connection if we stopped reading early (bad chunk, listener error).
    if (!bodyRead) controller.abort();
  }
}

function invalidResponse(message: string, delivered: boolean, cause?: unknown): AttemptError {
  return new AttemptError({ category: "invalid_response", kind: "invalid-response", message, delivered, ...(cause !== undefined ? { cause } : {}) });
}
