import type { StatelyInspectionEvent } from "@statelyai/inspect";
import { afterAll, describe, expect, it } from "vitest";
import { blocklist, maxLength } from "../../actors/guardrails-builtin.js";
import { human } from "../../actors/messages.js";
import { resolveModelClient } from "../../actors/openai/openai-model-client.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { runAgent } from "../../machines/runner.js";
import { replies, startOpenAIServer, type OpenAIServer } from "../../testing/openai-server.js";
import { textTurn } from "../../testing/turns.js";
import { inspectAgent } from "../../visualize/inspector.js";

/**
 * Issue 33, point 5: the inspector sees the new states. One run through the Stately inspector
 * (`@statelyai/inspect`, behind `inspectAgent`'s adapter): a blocking input guardrail passes, the
 * first answer is sent back by an output guardrail (retry), and the second model call outlives the
 * run's deadline. What the inspector received shows each step: the states, the guardrail actors and
 * their verdicts, the deadline timer firing and the run ending Failed{deadline}.
 */

const servers: OpenAIServer[] = [];
afterAll(async () => {
  await Promise.all(servers.map((server) => server.close()));
});

type Snapshot = { value?: unknown; context?: { loop?: { iteration?: number; deadline?: number; termination?: { reason?: string } | null } } };

/** The root agent's state values, in the order the inspector received them (repeats dropped). */
function rootPath(sent: readonly StatelyInspectionEvent[]): string[] {
  const root = sent.find((event) => event.type === "@xstate.actor" && event.parentId === undefined)!.sessionId;
  const path: string[] = [];
  for (const event of sent) {
    if (event.type !== "@xstate.snapshot" || event.sessionId !== root) continue;
    const value = (event.snapshot as Snapshot).value;
    const leaf = typeof value === "string" ? value : JSON.stringify(value).match(/"(\w+)"\}+$/)?.[1];
    if (leaf && path.at(-1) !== leaf) path.push(leaf);
  }
  return path;
}

describe("the inspector sees guardrails and the deadline", () => {
  it("an input guardrail, an output guardrail's retry and the deadline, as states, actors and events", async () => {
    // The first answer is over the output guardrail's limit; the second call never answers.
    const server = await startOpenAIServer({ respond: (request) => (request.index === 0 ? textTurn("An answer far too long for the output guardrail's limit.") : replies.hang()) });
    servers.push(server);
    const sent: StatelyInspectionEvent[] = [];
    const inspector = inspectAgent({ mode: "adapter", adapter: { send: (event) => void sent.push(event) } });
    const machine = createReactMachine({
      modelClient: resolveModelClient({ baseURL: server.baseURL, apiKey: "test-key", model: "gpt-4o-mini" }),
      inputGuardrails: [blocklist(["forbidden"])],
      outputGuardrails: [maxLength(40, { onHit: "retry" })],
      config: { maxDurationMs: 2_000 },
      configFile: false,
    });
    const started = Date.now();
    const output = await runAgent(machine, { messages: [human("Tell me something")] }, { inspect: inspector.inspect });
    // The inspector converts on 0 ms timers.
    for (let i = 0; i < 4; i++) await new Promise((resolve) => setTimeout(resolve, 0));
    inspector.stop();
    expect(output.termination?.reason).toBe("deadline");
    expect(server.requests).toHaveLength(2);

    // The states, in order: the input check, the model, the output check, the model again (the retry), then Failed.
    expect(rootPath(sent)).toEqual(["Initialising", "GuardingInput", "AgentLLM", "GuardingOutput", "AgentLLM", "Failed"]);

    // The guardrails and the deadline timer are actors the inspector knows, children of the agent.
    const actors = sent.filter((event) => event.type === "@xstate.actor");
    for (const name of ["ReActAgent.inputGuardrails", "ReActAgent.outputGuardrails", "ReActAgent.deadlineTimer"]) {
      expect(actors.map((event) => event.name), name).toContain(name);
    }

    // Their verdicts arrive as the events that move the chart on.
    const events = sent.flatMap((event) => (event.type === "@xstate.event" ? [event.event as { type: string; output?: unknown }] : []));
    const done = (actor: string) => events.find((event) => event.type === `xstate.done.actor.ReActAgent.${actor}`);
    expect(done("inputGuardrails")?.output).toEqual({ verdict: "pass" });
    // The feedback is prompt text (it quotes the answer's size and reaches the model): masked like the rest.
    expect(done("outputGuardrails")?.output).toMatchObject({ verdict: "retry", guardrail: "maxLength", feedback: expect.stringMatching(/^‹text \d+ chars›$/) });
    expect(JSON.stringify(sent)).not.toContain("over the limit of 40");
    expect(done("deadlineTimer")).toBeDefined();
    // The retry cost an iteration before the deadline's event came.
    const order = ["xstate.done.actor.ReActAgent.inputGuardrails", "xstate.done.actor.ReActAgent.outputGuardrails", "xstate.done.actor.ReActAgent.deadlineTimer"];
    expect(events.map((event) => event.type).filter((type) => order.includes(type))).toEqual(order);

    // The last snapshot: the run's deadline (absolute, from its start) and why it failed.
    const snapshots = sent.flatMap((event) => (event.type === "@xstate.snapshot" ? [event.snapshot as Snapshot] : []));
    const last = snapshots.filter((snapshot) => snapshot.value === "Failed").at(-1)!;
    expect(last.context?.loop?.termination?.reason).toBe("deadline");
    expect(last.context?.loop?.iteration).toBe(1);
    expect(last.context?.loop?.deadline).toBeGreaterThanOrEqual(started + 2_000);
    expect(last.context?.loop?.deadline).toBeLessThan(started + 3_000);
  });

  it("a guardrail's trip reason and feedback are masked like prompt text, and shown with keepText; why the run ended is always shown", async () => {
    const server = await startOpenAIServer({ respond: () => textTurn("never asked") });
    servers.push(server);
    const secretWord = "zanzibar-launch-codes";
    const machine = createReactMachine({
      modelClient: resolveModelClient({ baseURL: server.baseURL, apiKey: "test-key", model: "gpt-4o-mini" }),
      inputGuardrails: [blocklist([secretWord])],
      configFile: false,
    });
    const run = async (keepText: boolean) => {
      const sent: StatelyInspectionEvent[] = [];
      const inspector = inspectAgent({ mode: "adapter", keepText, adapter: { send: (event) => void sent.push(event) } });
      const output = await runAgent(machine, { messages: [human(`Tell me the ${secretWord}`)] }, { inspect: inspector.inspect });
      for (let i = 0; i < 4; i++) await new Promise((resolve) => setTimeout(resolve, 0));
      inspector.stop();
      return { output, sent: JSON.stringify(sent) };
    };
    const masked = await run(false);
    expect(masked.output.termination).toMatchObject({ reason: "guardrailTripped", detail: expect.stringContaining(secretWord) });
    // The reason the blocklist gives names the blocked word: nowhere in what the inspector got (the trip, the termination, the emitted event).
    expect(masked.sent).not.toContain(secretWord);
    expect(masked.sent).toContain('"reason":"guardrailTripped"');
    const kept = await run(true);
    expect(kept.sent).toContain(secretWord);
    expect(server.requests).toHaveLength(0);
  });
});
