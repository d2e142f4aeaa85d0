import type OpenAI from "openai";
import type { ChatCompletionCreateParamsNonStreaming, ChatCompletionCreateParamsStreaming } from "openai/resources/chat/completions";
import type { Cancellation } from "../cancellation.js";
import type { ModelTurn } from "../model-client.js";
import type { ModelRoute } from "../model-route.js";
import { readCompletion } from "./completion-read.js";
import { AttemptError, classifyFailure, invalidResponse } from "./model-failure.js";
import { describeWireIssue, parseChunk, parseCompletion } from "./openai-wire-schemas.js";
import { StreamMerger, type TurnParts } from "./stream-merge.js";

export interface AttemptInput {
  client: OpenAI;
  body: Record<string, unknown>;
  stream: boolean;
  timeoutMs: number;
  /** The model the turn is reported as (the target's, which may be a fallback). */
  model: string;
  /** The target's endpoint as shown (no credentials): what reasoning items are marked with. */
  endpoint: string;
  /** The caller's cancellation; cancelling cancels the HTTP request at once. */
  cancellation?: Cancellation | undefined;
  onText: (delta: string) => void;
  /** Reasoning text as it streams (a summary, or a server's reasoning field); never the answer. */
  onReasoning: (delta: string) => void;
  onToolArguments?: ((call: { index: number; name: string; arguments: string }) => void) | undefined;
  /** Which of the client's targets this is, reported on the turn (only when the client has fallbacks). */
  route?: ModelRoute;
}

/** The options of the one SDK request an attempt makes. */
export interface RequestOptions {
  signal: AbortSignal;
  maxRetries: 0;
}

/**
 * One attempt while it runs, as the API-specific reader sees it: the request's options, why it was
 * aborted (if it was), and two things the reader tells the guard, whether output already reached
 * the caller (then it must not be retried) and whether the whole body has been read.
 */
export interface AttemptRun {
  readonly requestOptions: RequestOptions;
  readonly abortReason: "caller" | "timeout" | undefined;
  /** Set by the reader to report whether output reached the caller. */
  delivered: () => boolean;
  /** Set once the whole body has been read: aborting then would only cost and free nothing. */
  bodyRead: boolean;
}

/** Reads one reply of one API inside a guarded attempt. */
export type ReadReply = (input: AttemptInput, run: AttemptRun) => Promise<TurnParts>;

const nothingDelivered = () => false;

/**
 * One HTTP request through the SDK, with its own AbortController: the caller's cancellation and the
 * attempt's timer both abort it, and it is released when the attempt ends. (A fresh controller per
 * request matters: the SDK adds an abort listener to whatever signal it is given and never removes
 * it, so handing it a long-lived signal would leak one listener per request. It is a real one: the
 * SDK's contract takes an AbortSignal, and anything that only looks like one would work only as long
 * as the SDK never hands it on to `fetch`.)
 * The timeout covers the whole attempt, streamed body included, not just the response headers.
 * `read` is the API's own part (Chat Completions or Responses); failures of either are classified here.
 */
export async function guardedAttempt(input: AttemptInput, read: ReadReply): Promise<ModelTurn> {
  const { cancellation } = input;
  const controller = new AbortController();
  const run: AttemptRun & { abortReason: AttemptRun["abortReason"] } = {
    // The SDK must not retry on its own: retries, their events and the toolChoice rule are ours.
    requestOptions: { signal: controller.signal, maxRetries: 0 },
    abortReason: undefined,
    delivered: nothingDelivered,
    bodyRead: false,
  };
  const onCallerAbort = () => {
    run.abortReason ??= "caller";
    controller.abort();
  };
  const timer = setTimeout(() => {
    run.abortReason ??= "timeout";
    controller.abort();
  }, input.timeoutMs);
  let stopListening: (() => void) | undefined;
  if (cancellation) {
    if (cancellation.aborted) onCallerAbort();
    else stopListening = cancellation.onAbort(onCallerAbort);
  }
  try {
    const parts = await read(input, run);
    // The parts are freshly made and ours: naming the model on them spares a copy of the turn.
    const turn: ModelTurn = Object.assign(parts, { model: input.model });
    if (input.route !== undefined) turn.route = input.route;
    return turn;
  } catch (error) {
    const delivered = run.delivered();
    const context = run.abortReason === undefined ? { timeoutMs: input.timeoutMs, delivered } : { timeoutMs: input.timeoutMs, delivered, abortReason: run.abortReason };
    throw new AttemptError(classifyFailure(error, context));
  } finally {
    clearTimeout(timer);
    stopListening?.();
    // Frees the connection if we stopped reading early (bad chunk, listener error).
    if (!run.bodyRead) controller.abort();
  }
}

/** One Chat Completions attempt (`POST /chat/completions`). */
export function attemptCompletion(input: AttemptInput): Promise<ModelTurn> {
  return guardedAttempt(input, readChatReply);
}

/** A reader of one API's stream, as `readStream` drives it. */
export interface StreamReader {
  /** One parsed SSE event of the SDK's; throws (`invalidResponse`, the server's failure) to end the attempt. */
  push(raw: unknown): void;
  /** Output reached the caller: a retry would repeat it. */
  readonly delivered: boolean;
  /** The stream's terminal item arrived (a finish_reason, `response.completed`). */
  readonly finished: boolean;
  /** Items read so far. */
  readonly count: number;
}

/**
 * Reads an SDK stream to its end through `reader`. The SDK parses each event with JSON.parse: a
 * SyntaxError is the server's fault (a cut or plain-text line), not the connection's, and sending
 * the same request again will not fix it. A body that ends before its terminal item (`awaited`) was
 * cut off (a proxy closed it cleanly): a connection failure, retried. A 200 answer that is not an
 * event stream at all (a proxy's or a login page) is the server's fault too: the same request gets the same page.
 */
export async function readStream(
  run: AttemptRun,
  reply: { data: AsyncIterable<unknown>; response: Response },
  reader: StreamReader,
  names: { item: "chunk" | "event"; awaited: string },
): Promise<void> {
  run.delivered = () => reader.delivered;
  try {
    for await (const raw of reply.data) reader.push(raw);
  } catch (error) {
    if (error instanceof SyntaxError) throw invalidResponse(`a stream ${names.item} is not JSON (${error.message})`, reader.delivered, error);
    throw error;
  }
  // The SDK ends the iteration quietly when its request is aborted, so look at why it ended.
  if (run.abortReason !== undefined) throw new Error("aborted");
  const contentType = reply.response.headers.get("content-type") ?? "";
  if (reader.count === 0 && !contentType.includes("event-stream")) {
    throw invalidResponse(`the server answered ${contentType.split(";")[0] || "a body without a content type"}, not an event stream (is the base URL an OpenAI-compatible API?)`, false);
  }
  if (!reader.finished) {
    throw new AttemptError({
      category: "connection",
      kind: "stream",
      message: reader.count === 0 ? `the stream ended before any ${names.item} arrived` : `the stream ended after ${reader.count} ${names.item}s without ${names.awaited}`,
      delivered: reader.delivered,
    });
  }
  run.bodyRead = true;
}

/** The Chat Completions merger, fed the SDK's chunks as they come: each is checked first (`parseChunk`). */
class ChunkReader extends StreamMerger implements StreamReader {
  override push(raw: unknown): void {
    const chunk = parseChunk(raw);
    if (!chunk.success) throw invalidResponse(`a stream chunk is malformed: ${describeWireIssue(chunk.error)}`, this.delivered);
    super.push(chunk.data);
  }

  get count(): number {
    return this.chunks;
  }
}

/** The body is built by us (it may carry fields the SDK's types do not know, like `top_k`). */
async function readChatReply(input: AttemptInput, run: AttemptRun): Promise<TurnParts> {
  if (!input.stream) return readWholeCompletion(input, run);
  const reader = new ChunkReader(input.onText, input.onToolArguments, input.onReasoning);
  const body = input.body as unknown as ChatCompletionCreateParamsStreaming;
  await readStream(run, await input.client.chat.completions.create(body, run.requestOptions).withResponse(), reader, { item: "chunk", awaited: "a finish_reason" });
  return reader.finish();
}

async function readWholeCompletion(input: AttemptInput, run: AttemptRun): Promise<TurnParts> {
  const body = input.body as unknown as ChatCompletionCreateParamsNonStreaming;
  const raw = await createWhole(() => input.client.chat.completions.create(body, run.requestOptions));
  run.bodyRead = true;
  const completion = parseCompletion(raw);
  if (!completion.success) throw invalidResponse(`the response is not a chat completion: ${describeWireIssue(completion.error)}`, false);
  const turn = readCompletion(completion.data);
  if (!turn) throw invalidResponse("the response has no choices", false);
  // A whole answer reaches the caller as one delta, so `streamingOutput` works either way.
  if (turn.content !== "") input.onText(turn.content);
  if (turn.reasoning !== undefined) input.onReasoning(turn.reasoning);
  return turn;
}

/** A non-streamed request: a JSON content type with a body that is not JSON (cut, or a proxy's page) is the server's fault. */
export async function createWhole(create: () => Promise<unknown>): Promise<unknown> {
  try {
    return await create();
  } catch (error) {
    if (error instanceof SyntaxError) throw invalidResponse(`the response is not JSON (${error.message})`, false, error);
    throw error;
  }
}
