import { getEventListeners } from "node:events";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { human } from "../../actors/messages.js";
import { resolveModelClient } from "../../actors/openai/openai-model-client.js";
import type { AgentOutput } from "../../machines/contract/context.js";
import { persistAgent, restoreAgent } from "../../machines/persistence/persistence.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { runAgent } from "../../machines/runner.js";
import { replies, startOpenAIServer, type ReceivedRequest } from "../../testing/openai-server.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import { defineTool } from "../../tools/tool.js";
import { createActor } from "xstate";
import { fixture, isRunning } from "../mcp/helpers.js";
import { FAST_RESILIENCE, SECRET_KEY } from "../model-client/harness.js";
import { FINAL_TEXT, finalTextStream, roundOf, toolCallStream } from "./fault-plan.js";
import { watchProcess } from "./process-watch.js";
import { activeResources, settleHandles, settleResources, trackNewHandles } from "./resources.js";

/*
 * Load: many agents at once in one process against the loopback server, then proof that nothing
 * was left behind: no timers, sockets or child processes beyond what was there before
 * (process.getActiveResourcesInfo()), no listener left on the long-lived signal every run got,
 * no MaxListenersExceededWarning, no unhandled rejection, every response read to the end.
 */

const AGENTS = 1_000;

/**
 * Round 1 asks for the tool, round 2 answers. Replies are held back and released in groups of
 * `group` (or when every expected request of the round has come), so at least that many
 * connections are open at once; each then streams event by event, 1 ms apart.
 */
function respondInGroups(options: { group: number; agents: number; call?: { id: string; name: string; arguments: string } }) {
  const held: (() => void)[][] = [[], []];
  const received = [0, 0];
  let peakHeld = 0;
  return {
    respond: async (request: ReceivedRequest) => {
      const round = roundOf(request);
      received[round]! += 1;
      const released = new Promise<void>((resolve) => held[round]!.push(resolve));
      peakHeld = Math.max(peakHeld, held[round]!.length);
      if (held[round]!.length >= options.group || received[round] === options.agents) for (const release of held[round]!.splice(0)) release();
      await released;
      return replies.sse(round === 0 ? toolCallStream(options.call) : finalTextStream(), { delayMs: 1 });
    },
    /** The most requests that were open on the server at the same time. */
    get peak() {
      return peakHeld;
    },
  };
}

describe("load", () => {
  it(`${AGENTS} concurrent agents complete and leave no timers, sockets, listeners or warnings behind`, async () => {
    const responder = respondInGroups({ group: 200, agents: AGENTS });
    const server = await startOpenAIServer({ respond: responder.respond });
    try {
      const before = activeResources();
      const handles = trackNewHandles();
      const watch = watchProcess();
      const runs: string[] = [];
      const lookup = defineTool({
        name: "lookup",
        description: "Look up the weather of a city",
        parameters: z.object({ city: z.string() }),
        parallelSafe: true,
        execute: async ({ city }) => {
          runs.push(city);
          return `${city}: sunny`;
        },
      });
      // One client and one machine for all: how an application serves many users.
      const modelClient = resolveModelClient({ baseURL: server.baseURL, apiKey: SECRET_KEY, model: "load-model", timeoutMs: 30_000, resilience: FAST_RESILIENCE });
      const machine = createReactMachine({ modelClient, tools: [lookup] });
      const shutdown = new AbortController();

      const outputs: AgentOutput[] = await Promise.all(
        Array.from({ length: AGENTS }, (_, i) => runAgent(machine, { messages: [human(`What is the weather in Oslo? (#${i})`)] }, { signal: shutdown.signal })),
      );

      expect(outputs.filter((o) => o.status !== "succeeded").map((o) => o.termination)).toEqual([]);
      expect(new Set(outputs.map((o) => o.finalAnswer))).toEqual(new Set([FINAL_TEXT]));
      expect(outputs.every((o) => o.rounds === 2 && o.usage.totalTokens === 42 && o.messages.length === 4)).toBe(true);
      expect(new Set(outputs.map((o) => o.runId)).size).toBe(AGENTS);
      expect(runs).toHaveLength(AGENTS);
      expect(server.requests).toHaveLength(2 * AGENTS);
      // Every response was read to its end (a body left unread would show as client-closed or never end).
      const outcomes = await Promise.all(server.requests.map((r) => server.outcome(r.index)));
      expect(outcomes.filter((o) => o !== "completed")).toEqual([]);
      expect(responder.peak).toBe(200);

      // The long-lived signal got one listener per run while it ran, and none is left.
      expect(getEventListeners(shutdown.signal, "abort")).toHaveLength(0);
      await watch.stop();
      expect(watch.rejections).toEqual([]);
      expect(watch.warnings.map((w) => `${w.name}: ${w.message}`)).toEqual([]);
      expect(watch.consoleLines).toEqual([]);
      // Idle keep-alive sockets close by themselves after the keep-alive timeout; leaked ones would not.
      // Every timer, socket and pipe created during the runs is gone, and the process holds no more handles than before.
      expect(await settleHandles(handles, 20_000)).toEqual({});
      handles.stop();
      expect(await settleResources(before, 5_000)).toEqual({});
    } finally {
      await server.close();
    }
  }, 120_000);

  it("20 concurrent agents with an MCP server each: every child process is gone afterwards", async () => {
    const call = { id: "call_files", name: "files_read", arguments: "{}" };
    const server = await startOpenAIServer({ respond: respondInGroups({ group: 20, agents: 20, call }).respond });
    try {
      const before = activeResources();
      const handles = trackNewHandles();
      const watch = watchProcess();
      const modelClient = resolveModelClient({ baseURL: server.baseURL, apiKey: SECRET_KEY, model: "load-model", timeoutMs: 30_000, resilience: FAST_RESILIENCE });
      const providers = Array.from({ length: 20 }, () => fixture({ filter: ["files_read"] }));
      const outputs = await Promise.all(
        providers.map((provider) => runAgent(createReactMachine({ modelClient, toolProviders: [provider] }), { messages: [human("read the files")] })),
      );

      expect(outputs.map((o) => o.status)).toEqual(providers.map(() => "succeeded"));
      expect(outputs.every((o) => o.messages[2]?.role === "tool" && o.messages[2].content === "called files_read")).toBe(true);
      // runAgent resolves after the providers closed: the processes are already gone.
      const pids = providers.map((p) => p.pid);
      expect(pids.every((pid) => typeof pid === "number")).toBe(true);
      expect(pids.filter((pid) => isRunning(pid!))).toEqual([]);
      await watch.stop();
      expect(watch.rejections).toEqual([]);
      expect(watch.warnings.map((w) => `${w.name}: ${w.message} ${w.stack}`)).toEqual([]);
      // Child processes and their stdio pipes included.
      expect(await settleHandles(handles, 20_000)).toEqual({});
      handles.stop();
      expect(await settleResources(before, 5_000)).toEqual({});
    } finally {
      await server.close();
    }
  }, 120_000);

  it("one long-lived signal shared by 200 running agents holds a single listener, cancels them all, and keeps none", async () => {
    const shutdown = new AbortController();
    const started: Promise<void>[] = [];
    const runs = Array.from({ length: 200 }, () => {
      // Each agent waits in a slow model call until the signal cancels it.
      const machine = createReactMachine({ modelClient: scriptedModel([{ content: "too late", delayMs: 60_000 }]) });
      let calling!: () => void;
      started.push(new Promise<void>((resolve) => (calling = resolve)));
      return runAgent(machine, { messages: [human("wait")] }, { signal: shutdown.signal, onEvent: (e) => e.type === "model.call.started" && calling() });
    });
    await Promise.all(started);
    expect(getEventListeners(shutdown.signal, "abort")).toHaveLength(1);
    shutdown.abort();
    const outputs = await Promise.all(runs);
    expect(new Set(outputs.map((o) => `${o.status}:${o.termination?.reason}`))).toEqual(new Set(["failed:cancelled"]));
    expect(getEventListeners(shutdown.signal, "abort")).toHaveLength(0);
  });

  it("a run restored from a finished snapshot leaves no listener on the caller's signal", async () => {
    const machine = createReactMachine({ modelClient: scriptedModel([{ content: "hi" }]) });
    const actor = createActor(machine, { input: { messages: [human("hello")] } });
    const finished = new Promise<void>((resolve) => actor.subscribe({ complete: resolve }));
    actor.start();
    await finished;
    const signal = new AbortController().signal;
    const output = await runAgent(machine, {}, { snapshot: restoreAgent(machine, persistAgent(actor)), signal });
    expect(output).toMatchObject({ status: "succeeded", finalAnswer: "hi" });
    expect(getEventListeners(signal, "abort")).toHaveLength(0);
  });
});
