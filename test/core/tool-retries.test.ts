import { describe, expect, it } from "vitest";
import { z } from "zod";
import { human } from "../../actors/messages.js";
import { MemoryToolJournal } from "../../actors/tool-journal.js";
import { retryDelayMs } from "../../actors/tool-retry.js";
import type { AgentEmitted } from "../../machines/contract/events.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { runAgent } from "../../machines/runner.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import { checkTool, defineTool, ToolDefinitionError, type Tool } from "../../tools/tool.js";
import { nextEvent, retriedTool, startAgent } from "./helpers.js";

/**
 * A tool that asks for retries (`idempotent: true, retries`): a call that threw or timed out runs
 * again after a wait, doubled each time; the model reads the last attempt's outcome, and every
 * failure before it is a `tool.call.retrying`. One call all the same: one start, one journal entry.
 */

const scripted = (script: (string | Error | "hang")[], options: { retries: number; retryDelayMs?: number; timeoutMs?: number }) => retriedTool("fetch_rate", script, options);

/** One round that calls the tool, then an answer; the events of the run and the observation the model read. */
async function runWith(tool: Tool, journal?: MemoryToolJournal) {
  const model = scriptedModel([{ content: "", toolCalls: [{ id: "c1", name: "fetch_rate", arguments: { pair: "EURUSD" } }] }, { content: "done" }]);
  const events: AgentEmitted[] = [];
  const output = await runAgent(createReactMachine({ modelClient: model, tools: [tool], configFile: false, ...(journal ? { journal } : {}) }), { messages: [human("rate?")], runId: "r1" }, { onEvent: (event) => events.push(event) });
  const observation = model.requests[1]!.messages.find((m) => m.role === "tool");
  const of = <T extends AgentEmitted["type"]>(type: T) => events.filter((e): e is Extract<AgentEmitted, { type: T }> => e.type === type);
  return { output, observation, of };
}

describe("tool retries", () => {
  it("run a call that threw again, with a doubling wait, until it answers: the model reads the answer", async () => {
    const { tool, calls } = scripted([new Error("503 from the rates service"), new Error("503 again"), "1.08"], { retries: 3, retryDelayMs: 5 });
    const { output, observation, of } = await runWith(tool);
    expect(output.status).toBe("succeeded");
    expect(calls()).toBe(3);
    expect(observation?.content).toBe("1.08");
    expect(of("tool.call.started")).toHaveLength(1);
    expect(of("tool.call.retrying").map(({ attempt, attempts, delayMs, errorKind, error }) => ({ attempt, attempts, delayMs, errorKind, error }))).toEqual([
      { attempt: 1, attempts: 4, delayMs: 5, errorKind: "threw", error: "fetch_rate failed: 503 from the rates service" },
      { attempt: 2, attempts: 4, delayMs: 10, errorKind: "threw", error: "fetch_rate failed: 503 again" },
    ]);
    expect(of("tool.call.completed")).toHaveLength(1);
    expect(of("tool.call.failed")).toEqual([]);
  });

  it("give the last failure to the model once the retries are spent", async () => {
    const { tool, calls } = scripted([new Error("down"), new Error("still down"), new Error("down for good")], { retries: 2, retryDelayMs: 0 });
    const { output, observation, of } = await runWith(tool);
    expect(output.status).toBe("succeeded");
    expect(calls()).toBe(3);
    expect(of("tool.call.retrying")).toHaveLength(2);
    expect(of("tool.call.failed")).toMatchObject([{ errorKind: "threw", error: "fetch_rate failed: down for good" }]);
    expect(observation?.content).toContain("down for good");
  });

  it("run a call that timed out again, each attempt with its own time limit", async () => {
    const { tool, calls } = scripted(["hang", "1.09"], { retries: 1, retryDelayMs: 0, timeoutMs: 40 });
    const { observation, of } = await runWith(tool);
    expect(calls()).toBe(2);
    expect(of("tool.call.retrying")).toMatchObject([{ attempt: 1, errorKind: "timeout", error: "fetch_rate timed out after 40 ms" }]);
    expect(observation?.content).toBe("1.09");
  });

  it("are one call in the journal: one claim, and the answer that came", async () => {
    const journal = new MemoryToolJournal();
    const started: string[] = [];
    const claim = journal.started.bind(journal);
    journal.started = (key, name) => (started.push(key.callId), claim(key, name));
    const { tool } = scripted([new Error("blip"), "1.10"], { retries: 1, retryDelayMs: 0 });
    await runWith(tool, journal);
    expect(started).toEqual(["c1"]);
    expect(journal.lookup({ runId: "r1", iteration: 0, callId: "c1" })).toMatchObject({ state: "completed", outcome: { status: "ok", content: "1.10" } });
  });

  it("stop waiting when the run is cancelled: the call ends as cancelled, and is not run again", async () => {
    const { tool, calls } = scripted([new Error("blip"), "never read"], { retries: 1, retryDelayMs: 600_000 });
    const model = scriptedModel([{ content: "", toolCalls: [{ id: "c1", name: "fetch_rate", arguments: { pair: "EURUSD" } }] }, { content: "done" }]);
    const { actor, done } = startAgent(createReactMachine({ modelClient: model, tools: [tool], configFile: false }), { messages: [human("rate?")] });
    await nextEvent(actor, "tool.call.retrying");
    actor.send({ type: "agent.cancel" });
    const output = await done;
    expect(output.termination).toMatchObject({ reason: "cancelled" });
    expect(calls()).toBe(1);
  });

  it("wait twice as long before each next attempt, never more than 30 s", () => {
    expect([1, 2, 3, 4].map((attempt) => retryDelayMs({ retryDelayMs: 100 }, attempt))).toEqual([100, 200, 400, 800]);
    expect(retryDelayMs({}, 1)).toBe(250);
    expect(retryDelayMs({ retryDelayMs: 20_000 }, 3)).toBe(30_000);
  });

  it("are refused for a tool that is not idempotent, and for counts or waits that are not numbers of the right kind", () => {
    const base = { name: "charge", description: "Charges a card", parameters: z.object({}), execute: () => "ok" };
    expect(() => defineTool({ ...base, retries: 2 })).toThrow(/retries needs idempotent: true.*set idempotent: true if it is, or leave retries out/);
    for (const retries of [0, 11, 1.5, Number.NaN]) expect(() => defineTool({ ...base, idempotent: true, retries })).toThrow(/tool "charge": retries must be a whole number from 1 to 10/);
    expect(() => defineTool({ ...base, idempotent: true, retries: 2, retryDelayMs: -1 })).toThrow(/retryDelayMs must be a number of milliseconds/);
    expect(() => defineTool({ ...base, idempotent: true, retryDelayMs: 10 })).toThrow(/retryDelayMs is only read with retries/);
    expect(() => defineTool({ ...base, idempotent: true, retries: 2 })).not.toThrow();
    // A tool built by hand (a provider's) is held to the same rules.
    const handMade: Tool = { name: "charge", description: "", inputSchema: { type: "object" }, parallelSafe: false, effectTags: [], retries: 3, validate: (args) => ({ ok: true, value: args as Record<string, unknown> }), execute: () => "ok" };
    expect(() => checkTool(handMade)).toThrow(ToolDefinitionError);
    expect(() => checkTool({ ...handMade, idempotent: true })).not.toThrow();
  });
});
