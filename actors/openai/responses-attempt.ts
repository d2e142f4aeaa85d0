import type { ResponseCreateParamsNonStreaming, ResponseCreateParamsStreaming } from "openai/resources/responses/responses";
import type { ModelTurn } from "../model-client.js";
import { invalidResponse } from "./model-failure.js";
import { createWhole, guardedAttempt, readStream, type AttemptInput, type AttemptRun } from "./openai-attempt.js";
import { describeWireIssue } from "./openai-wire-schemas.js";
import { readResponse, serverFailure } from "./responses-read.js";
import { ResponsesStreamReader } from "./responses-stream.js";
import { parseResponseObject } from "./responses-wire-schemas.js";
import type { TurnParts } from "./stream-merge.js";

/** One Responses API attempt (`POST /responses`), guarded like a Chat Completions one (`guardedAttempt`). */
export function attemptResponse(input: AttemptInput): Promise<ModelTurn> {
  return guardedAttempt(input, readResponsesReply);
}

async function readResponsesReply(input: AttemptInput, run: AttemptRun): Promise<TurnParts> {
  const source = { endpoint: input.endpoint, model: input.model };
  if (!input.stream) {
    const body = input.body as unknown as ResponseCreateParamsNonStreaming;
    const raw = await createWhole(() => input.client.responses.create(body, run.requestOptions));
    run.bodyRead = true;
    const parsed = parseResponseObject(raw);
    if (!parsed.success) throw invalidResponse(`the response is not a Responses API response: ${describeWireIssue(parsed.error)}`, false);
    if (parsed.data.status === "failed") throw serverFailure(parsed.data.error, false);
    const turn = readResponse(parsed.data, source);
    // A whole answer reaches the caller as one delta of each kind, as on the Chat Completions path.
    if (turn.content !== "") input.onText(turn.content);
    if (turn.reasoning !== undefined) input.onReasoning(turn.reasoning);
    return turn;
  }
  const reader = new ResponsesStreamReader(source, input.onText, input.onReasoning, input.onToolArguments);
  const body = input.body as unknown as ResponseCreateParamsStreaming;
  await readStream(run, await input.client.responses.create(body, run.requestOptions).withResponse(), reader, { item: "event", awaited: "response.completed" });
  return reader.finish();
}
