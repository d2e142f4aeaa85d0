import { afterEach, describe, expect, it } from "vitest";
import { createActor } from "xstate";
import { createLLMActor, type LLMInput } from "../../actors/llm-step.js";
import { human } from "../../actors/messages.js";
import type { ModelCallOptions, ModelClient } from "../../actors/model-client.js";
import { replies } from "../../testing/openai-server.js";
import { clientFor, closeServers, serve } from "./harness.js";

afterEach(closeServers);

const INPUT: LLMInput = {
  agent: "cancel-test",
  runId: "run-1",
  iteration: 0,
  rounds: 0,
  messages: [human("What is the capital of Denmark?")],
  state: {},
  tools: [],
  sampling: {},
  extraParams: {},
};

async function waitFor(condition: () => boolean, timeoutMs = 2_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/*
 * The LLM step hands the model client a `Cancellation` instead of building its AbortSignal; these
 * check that stopping the step still cancels the request, with our client and with one that only
 * knows `signal`.
 */
describe("stopping the LLM step", () => {
  it("cancels the real client's in-flight HTTP request", async () => {
    const server = await serve(() => replies.hang());
    const step = createActor(createLLMActor({ modelClient: clientFor(server) }), { input: INPUT });
    step.start();
    await waitFor(() => server.requests.length === 1);
    step.stop();
    expect(await server.outcome(0)).toBe("client-closed");
    expect(server.requests).toHaveLength(1);
  });

  it("aborts the signal of a client that reads `signal` rather than `cancellation`", async () => {
    let seen: AbortSignal | undefined;
    const signalOnly: ModelClient = {
      description: "reads only options.signal",
      complete: (_request, options: ModelCallOptions = {}) =>
        new Promise((_resolve, reject) => {
          seen = options.signal;
          options.signal?.addEventListener("abort", () => reject(new Error("cancelled")), { once: true });
        }),
    };
    const step = createActor(createLLMActor({ modelClient: signalOnly }), { input: INPUT });
    step.start();
    await waitFor(() => seen !== undefined);
    expect(seen?.aborted).toBe(false);
    step.stop();
    expect(seen?.aborted).toBe(true);
  });
});
