import fc from "fast-check";
import { replies, toSse, type Reply, type ReceivedRequest } from "../../testing/openai-server.js";

/*
 * A two-round conversation served by the loopback server, and the faults it may suffer. Round 1
 * (no tool result in the request yet) asks for `lookup`; round 2 answers. Each reply is a real
 * SSE stream whose first event carries no output (the role chunk), so a cut after 0 or 1 events
 * has delivered nothing and may be retried, and a cut after 2 or 3 events has delivered output
 * and must not be.
 */

export const FINAL_TEXT = "The answer is 42.";
export const TOOL_CALL = { id: "call_lookup", name: "lookup", arguments: '{"city":"Oslo"}' } as const;
export const ROUND_USAGE = [
  { prompt_tokens: 20, completion_tokens: 7, total_tokens: 27 },
  { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
] as const;

const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
  id: "chatcmpl-fault",
  object: "chat.completion.chunk",
  model: "fault-model",
  choices: [{ index: 0, delta, finish_reason: finish }],
});

export function toolCallStream(call: { id: string; name: string; arguments: string } = TOOL_CALL): string {
  return toSse([
    chunk({ role: "assistant", content: "" }),
    chunk({ tool_calls: [{ index: 0, id: call.id, type: "function", function: { name: call.name, arguments: "" } }] }),
    chunk({ tool_calls: [{ index: 0, function: { arguments: call.arguments } }] }),
    chunk({}, "tool_calls"),
    { id: "chatcmpl-fault", object: "chat.completion.chunk", model: "fault-model", choices: [], usage: ROUND_USAGE[0] },
  ]);
}

export function finalTextStream(): string {
  return toSse([
    chunk({ role: "assistant", content: "" }),
    chunk({ content: "The answer " }),
    chunk({ content: "is 42." }),
    chunk({}, "stop"),
    { id: "chatcmpl-fault", object: "chat.completion.chunk", model: "fault-model", choices: [], usage: ROUND_USAGE[1] },
  ]);
}

/** Which round a request belongs to: 0 until the conversation holds the tool's result. */
export function roundOf(request: ReceivedRequest): 0 | 1 {
  const messages = (request.body as { messages?: { role: string }[] } | undefined)?.messages ?? [];
  return messages.some((m) => m.role === "tool") ? 1 : 0;
}

export type Fault =
  | { kind: "ok" }
  | { kind: "status"; status: 429 | 500 | 502 | 503 | 400 | 401 }
  | { kind: "reset" }
  /** No answer at all: the attempt's timeout ends it. */
  | { kind: "stall" }
  | { kind: "cut"; afterEvents: 0 | 1 | 2 | 3; then: "destroy" | "hang" | "end" }
  /** Cut inside the first (role) event: nothing delivered. */
  | { kind: "cutBytes"; afterBytes: number; then: "destroy" | "hang" | "end" };

export const faultArbitrary: fc.Arbitrary<Fault> = fc.oneof(
  { weight: 2, arbitrary: fc.constant<Fault>({ kind: "ok" }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("status" as const), status: fc.constantFrom(429 as const, 500 as const, 502 as const, 503 as const, 400 as const, 401 as const) }) },
  { weight: 1, arbitrary: fc.constant<Fault>({ kind: "reset" }) },
  { weight: 1, arbitrary: fc.constant<Fault>({ kind: "stall" }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant("cut" as const),
      afterEvents: fc.constantFrom(0 as const, 1 as const, 2 as const, 3 as const),
      then: fc.constantFrom("destroy" as const, "hang" as const, "end" as const),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant("cutBytes" as const), afterBytes: fc.integer({ min: 1, max: 40 }), then: fc.constantFrom("destroy" as const, "hang" as const, "end" as const) }),
  },
);

/** The reply for a request that suffers `fault` in round `round`. */
export function replyFor(fault: Fault, round: 0 | 1): Reply {
  const body = round === 0 ? toolCallStream() : finalTextStream();
  switch (fault.kind) {
    case "ok":
      return replies.sse(body);
    case "status":
      return fault.status === 429 ? replies.rateLimited({ ms: 5 }) : replies.error(fault.status, `injected ${fault.status}`);
    case "reset":
      return replies.destroy();
    case "stall":
      return replies.hang();
    case "cut":
      return replies.sse(body, { cut: { afterEvents: fault.afterEvents, then: fault.then } });
    case "cutBytes":
      return replies.sse(body, { cut: { afterBytes: fault.afterBytes, then: fault.then } });
  }
}

/** Output reached the caller before the fault, so the attempt must not be retried. */
const delivered = (fault: Fault) => fault.kind === "cut" && fault.afterEvents >= 2;

export function isRetryable(fault: Fault): boolean {
  if (fault.kind === "status") return fault.status === 429 || fault.status >= 500;
  return fault.kind !== "ok" && !delivered(fault);
}

/** The ModelError kinds a run failing on this fault may report. */
export function errorKindsOf(fault: Fault): string[] {
  switch (fault.kind) {
    case "status":
      return ["http"];
    case "reset":
      return ["connection"];
    case "stall":
      return ["timeout"];
    case "cut":
    case "cutBytes":
      return fault.then === "hang" ? ["timeout"] : ["connection", "stream"];
    case "ok":
      return [];
  }
}

export interface Prediction {
  status: "succeeded" | "failed";
  /** Requests the server receives. */
  requests: number;
  /** Rounds the model completed. */
  rounds: number;
  /** For a failure: the fault that ended it. */
  fatal?: Fault;
}

/** What the resilience policy (1 + maxRetries attempts per round, no retry after delivery) makes of the plan. */
export function predict(plan: readonly Fault[], maxRetries: number): Prediction {
  let next = 0;
  for (let round = 0; round < 2; round++) {
    for (let attempt = 0; ; attempt++) {
      const fault = plan[next++] ?? { kind: "ok" };
      if (fault.kind === "ok") break;
      if (!isRetryable(fault) || attempt === maxRetries) return { status: "failed", requests: next, rounds: round, fatal: fault };
    }
  }
  return { status: "succeeded", requests: next, rounds: 2 };
}
