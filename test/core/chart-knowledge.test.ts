import { describe, expect, it } from "vitest";
import { createActor, waitFor } from "xstate";
import { z } from "zod";
import { defineGuardrail } from "../../actors/guardrail.js";
import { requireApproval } from "../../actors/guards/index.js";
import { human } from "../../actors/messages.js";
import { agentTool } from "../../machines/composition/agent-tool.js";
import { momentOf, type AgentSnapshotLike } from "../../machines/contract/moment.js";
import { handoff } from "../../machines/composition/handoff.js";
import { persistAgent, runStatusOf } from "../../machines/persistence/persistence.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { STATE_TAGS, tagsAt } from "../../machines/contract/state-tags.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import { multiply } from "./helpers.js";

/** What the test reads of XState's state nodes (machine.root and below). */
interface Node {
  key: string;
  parent?: Node;
  id: string;
  type: string;
  description?: string;
  tags: string[];
  states: Record<string, Node>;
  invoke: { id: string; src: unknown }[];
  transitions: Map<string, { description?: string; guard?: unknown; actions: unknown[]; target?: Node[] }[]>;
  always?: { guard?: unknown; description?: string; target?: Node[] }[];
  exit: unknown[];
  /** `asks`: the step the state asks the step host for. */
  meta?: { asks?: string };
}

/** Every optional state present: structured output, context limit, prepareRound, agent tools and a handoff. */
function fullMachine() {
  const writer = createReactMachine({ name: "Writer", modelClient: scriptedModel([]), configFile: false });
  const other = createReactMachine({ name: "Other", modelClient: scriptedModel([]), configFile: false });
  return createReactMachine({
    name: "Full",
    modelClient: scriptedModel([]),
    tools: [multiply, agentTool(writer, { name: "ask_writer", description: "Ask the writer" }), handoff(other)],
    output: z.object({ n: z.number() }),
    prepareRound: () => ({}),
    config: { context: { maxTokens: 10_000, strategy: "trim", keepLast: 2 } },
    configFile: false,
  });
}

/** Every part with states around the round: guardrails of each kind, constraints, a deadline, nested agents. */
function guardedMachine() {
  const writer = createReactMachine({ name: "Writer", modelClient: scriptedModel([]), configFile: false });
  const guardrail = (mode: "blocking" | "parallel") => defineGuardrail({ name: `g-${mode}`, mode, check: () => ({ verdict: "pass" }) });
  return createReactMachine({
    name: "Guarded",
    modelClient: scriptedModel([]),
    tools: [multiply, agentTool(writer, { name: "ask_writer", description: "Ask the writer" })],
    constraints: [requireApproval({ tools: ["multiply"] })],
    inputGuardrails: [guardrail("blocking"), guardrail("parallel")],
    outputGuardrails: [guardrail("blocking")],
    config: { maxDurationMs: 60_000, context: { maxTokens: 10_000, strategy: "trim", keepLast: 2 } },
    configFile: false,
  });
}

function nodesOf(root: Node): Node[] {
  const all: Node[] = [];
  const visit = (node: Node) => {
    all.push(node);
    Object.values(node.states).forEach(visit);
  };
  visit(root);
  return all;
}

const actionName = (action: unknown) => (typeof action === "string" ? action : (action as { type?: unknown } | null)?.type);

/**
 * The actors that stream progress, and the actions that settle (flush) it on every outcome: the
 * progress report alone, or the one action that settles the whole outcome (AgentLLM's reply, Executing's batch).
 */
const SETTLE_ACTIONS: Record<string, readonly string[]> = { llm: ["reportModelProgress", "settleReply"], toolExecutor: ["reportToolProgress", "settleOutcomes"] };
/** The actors that send no progress: a new actor must join one of the two lists. */
const NO_PROGRESS = new Set(["guard", "approvalTimer", "compaction", "toolProviders"]);

describe("knowledge about the chart lives in the chart", () => {
  const machine = fullMachine();
  const nodes = nodesOf(machine.root as unknown as Node);
  const leaves = nodes.filter((n) => Object.keys(n.states).length === 0);
  const tagged = (tag: string) => nodes.filter((n) => n.tags.includes(tag)).map((n) => n.key).sort();

  it("walks every state, the optional ones included", () => {
    const keys = nodes.map((n) => n.key);
    for (const key of ["PreparingRound", "CheckContext", "Compacting", "AgentLLM", "Preflight", "AwaitingApproval", "Executing", "Delegating", "HandingOff", "CheckOutput", "Succeeded", "Failed"]) {
      expect(keys).toContain(key);
    }
  });

  it("every state has a description", () => {
    const missing = nodes.filter((n) => typeof n.description !== "string" || n.description.trim() === "").map((n) => n.id);
    expect(missing).toEqual([]);
  });

  it("checkpoints and approvals are tags, on the states the docs name", () => {
    expect(tagged(STATE_TAGS.checkpoint)).toEqual(["AgentLLM", "AwaitingApproval", "Delegating", "Executing", "HandingOff"]);
    // A summary is a model call worth a save before it; trimming (the machines above) is not.
    const summarizing = createReactMachine({ modelClient: scriptedModel([]), config: { context: { maxTokens: 10_000, strategy: "summarize", keepLast: 2 } }, configFile: false });
    expect(nodesOf(summarizing.root as unknown as Node).filter((n) => n.tags.includes(STATE_TAGS.checkpoint)).map((n) => n.key).sort()).toEqual(["AgentLLM", "Compacting", "Executing"]);
    expect(tagged(STATE_TAGS.approval)).toEqual(["AwaitingApproval"]);
    expect(tagged(STATE_TAGS.modelCall)).toEqual(["AgentLLM"]);
    expect(tagged(STATE_TAGS.nestedAgent)).toEqual(["Delegating", "HandingOff"]);
    expect(tagged(STATE_TAGS.startingTools)).toEqual(["Initialising"]);
  });

  it("a state is tagged stable exactly when the run rests in it (no unguarded eventless transition leaves it)", () => {
    for (const leaf of leaves) {
      const passesThrough = (leaf.always ?? []).some((t) => t.guard === undefined);
      expect({ state: leaf.id, stable: leaf.tags.includes(STATE_TAGS.stable) }).toEqual({ state: leaf.id, stable: !passesThrough });
    }
  });

  /**
   * What each state waits on and the events of its outcome: its invoked actors (the step host
   * aside: its answers are the outcomes of the steps the states ask it for), and the step it asks
   * the step host for (`meta.asks`), answered with `<step>.done` / `<step>.error`.
   */
  const awaited = nodes.flatMap((node) => [
    ...node.invoke
      .filter((invoke) => invoke.src !== "steps")
      .map((invoke) => ({ node, src: String(invoke.src), outcomes: [`xstate.done.actor.${invoke.id}`, `xstate.error.actor.${invoke.id}`] })),
    ...(node.meta?.asks !== undefined ? [{ node, src: node.meta.asks, outcomes: [`${node.meta.asks}.done`, `${node.meta.asks}.error`] }] : []),
  ]);

  it("the steps the states ask the step host for are the model call and the batch", () => {
    expect(awaited.filter(({ outcomes }) => !outcomes[0]!.startsWith("xstate.")).map(({ node, src }) => `${node.key}: ${src}`)).toEqual(["AgentLLM: llm", "Executing: toolExecutor"]);
  });

  it("a state waiting on a step is left before the answer only for a final state, unless it stops the step on exit", () => {
    // Every way to a final state stops the step host, and the step with it; any other way out must stop the step itself.
    for (const chart of [machine, guardedMachine()]) {
      for (const node of nodesOf(chart.root as unknown as Node).filter((n) => n.meta?.asks !== undefined)) {
        const step = node.meta!.asks!;
        const answers = new Set([`${step}.done`, `${step}.error`]);
        const ways: string[] = [];
        for (let at: Node | undefined = node; at; at = at.parent) {
          const transitions = [...[...at.transitions].flatMap(([event, list]) => list.map((t) => ({ event, t }))), ...(at.always ?? []).map((t) => ({ event: "always", t }))];
          for (const { event, t } of transitions) {
            if (at === node && answers.has(event)) continue;
            for (const target of t.target ?? []) {
              // A target inside the state keeps it (targetless transitions have none); any other leaves it, a final one ending the run.
              let inside = false;
              for (let up: Node | undefined = target; up; up = up.parent) if (up === node) inside = true;
              if (!inside && target.type !== "final") ways.push(`${at.key} ${event} → ${target.key}`);
            }
          }
        }
        const stops = node.exit.some((action) => actionName(action) === "abortStep");
        expect({ state: `${chart.id}.${node.key}`, leftMidStep: stops ? [] : ways }).toEqual({ state: `${chart.id}.${node.key}`, leftMidStep: [] });
      }
    }
  });

  it("every outcome of a progress-reporting actor settles its progress first", () => {
    expect(awaited.length).toBeGreaterThan(0);
    for (const { node, src, outcomes } of awaited) {
      expect(src in SETTLE_ACTIONS || NO_PROGRESS.has(src), `actor "${src}" must be listed: does it report progress?`).toBe(true);
      const settle = SETTLE_ACTIONS[src];
      if (!settle) continue;
      for (const outcome of outcomes) {
        const transitions = node.transitions.get(outcome) ?? [];
        expect(transitions.length, `${node.id} handles ${outcome}`).toBeGreaterThan(0);
        for (const transition of transitions) expect(settle, `${node.id} on ${outcome}`).toContain(actionName(transition.actions[0]));
      }
    }
  });

  it("every outcome of an invoked actor or an asked step is described", () => {
    for (const { node, src, outcomes } of awaited) {
      if (src === "toolProviders") continue; // it answers with events (tools.ready, tools.failed), not an outcome
      for (const outcome of outcomes) {
        for (const transition of node.transitions.get(outcome) ?? []) expect(transition.description, `${node.id} on ${outcome}`).toBeTruthy();
      }
    }
  });

  it("every transition that moves the run (one with a target) has a description", () => {
    const missing: string[] = [];
    for (const node of nodes) {
      const all = [...[...node.transitions].flatMap(([event, list]) => list.map((t) => ({ event, t }))), ...(node.always ?? []).map((t) => ({ event: "always", t }))];
      for (const { event, t } of all) if (t.target && t.target.length > 0 && !t.description) missing.push(`${node.id} on ${event}`);
    }
    expect(missing).toEqual([]);
  });

  it("a stored snapshot's tags come from the machine's definition", () => {
    expect(tagsAt(machine, { Evaluating: { ChildRunning: { ToolExecutor: "AwaitingApproval" } } })).toEqual(
      new Set([STATE_TAGS.stable, STATE_TAGS.checkpoint, STATE_TAGS.approval]),
    );
    expect(tagsAt(machine, "Initialising").has(STATE_TAGS.startingTools)).toBe(true);
    expect(tagsAt(machine, "Nowhere").size).toBe(0);
  });
});

describe("tag lookups replace state names", () => {
  it("a run parked for approval: runStatusOf (live, or stored with its machine) and the checkpoint moment read the tags", async () => {
    const machine = createReactMachine({
      modelClient: scriptedModel([{ toolCalls: [{ name: "multiply", arguments: { a: 2, b: 3 } }] }]),
      tools: [multiply],
      constraints: [requireApproval({ tools: ["multiply"] })],
      configFile: false,
    });
    const actor = createActor(machine, { input: { messages: [human("2*3")] } }).start();
    const live = await waitFor(actor, (s) => s.hasTag(STATE_TAGS.approval));
    expect(runStatusOf(live)).toBe("awaitingApproval");
    const saved = persistAgent(actor);
    expect(saved.status).toBe("awaitingApproval");
    const stored = JSON.parse(JSON.stringify(saved.snapshot)) as { status: string; value: unknown };
    expect(runStatusOf(stored, machine)).toBe("awaitingApproval");
    expect(() => runStatusOf(stored)).toThrow(/pass its machine too/);
    const moment = momentOf(live as unknown as AgentSnapshotLike);
    expect(moment).toMatch(/^Evaluating\.ChildRunning\.ToolExecutor\.AwaitingApproval\|0\|call_/);
    actor.stop();
  });
});
