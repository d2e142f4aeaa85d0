import { readFileSync } from "node:fs";
import { createActor, toPromise } from "xstate";
import { z } from "zod";
import { describe, expect, it } from "vitest";
import type { Guardrail } from "../../actors/guardrail.js";
import { blocklist, maxLength } from "../../actors/guardrails-builtin.js";
import { requireApproval } from "../../actors/guards/index.js";
import { human } from "../../actors/messages.js";
import type { ModelClient } from "../../actors/model-client.js";
import { pricedUsage } from "../../actors/pricing.js";
import type { AgentEmitted } from "../../machines/contract/events.js";
import { persistAgent, restoreAgent } from "../../machines/persistence/persistence.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { runAgent } from "../../machines/runner.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import { defineTool } from "../../tools/tool.js";
import { add } from "./helpers.js";

/** Issue 33, points 2 to 4: cost in currency, guardrails as states, the run's deadline. */

describe("cost", () => {
  it("prices cached tokens at the cached price and leaves a model without a price at null, never a guess", () => {
    const pricing = { known: { input: 2, output: 8, cachedInput: 0.5 } };
    const usage = { promptTokens: 1_000_000, completionTokens: 500_000, totalTokens: 1_500_000, cachedPromptTokens: 400_000 };
    // 600k fresh at 2, 400k cached at 0.5, 500k out at 8.
    expect(pricedUsage(usage, pricing, "known").cost).toBeCloseTo(1.2 + 0.2 + 4, 10);
    expect(pricedUsage(usage, pricing, "unknown-model").cost).toBeNull();
  });

  it("a run's usage.cost is the sum of its calls' costs", async () => {
    const model = scriptedModel([{ toolCalls: [{ name: "add", arguments: { a: 1, b: 2 } }], usage: { promptTokens: 100, completionTokens: 10 } }, { content: "3", usage: { promptTokens: 200, completionTokens: 5 } }]);
    const machine = createReactMachine({ modelClient: model, tools: [add], config: { pricing: { scripted: { input: 1, output: 2 } } }, configFile: false });
    const output = await runAgent(machine, { messages: [human("1+2")] });
    expect(output.usage.cost).toBeCloseTo((300 * 1 + 15 * 2) / 1_000_000, 12);
  });
});

describe("guardrails", () => {
  it("a blocking input guardrail trips before any model call: Failed{guardrailTripped} with its name and reason", async () => {
    const model = scriptedModel([{ content: "never" }]);
    const events: AgentEmitted[] = [];
    const machine = createReactMachine({ modelClient: model, inputGuardrails: [blocklist(["password"], { name: "secrets" })], configFile: false });
    const output = await runAgent(machine, { messages: [human("my password is hunter2")] }, { onEvent: (e) => events.push(e) });
    expect(output.termination).toMatchObject({ reason: "guardrailTripped", guardrail: "secrets" });
    expect(model.requests).toHaveLength(0);
    expect(events.find((e) => e.type === "guardrail.tripped")).toMatchObject({ stage: "input", guardrail: "secrets" });
  });

  it("a parallel input guardrail that trips cancels the model call in flight", async () => {
    const scripted = scriptedModel([{ content: "a slow answer", delayMs: 5_000 }]);
    let aborted = false;
    // The scripted model, noting when the call's signal aborts.
    const model: ModelClient = {
      description: scripted.description,
      complete: (request, options = {}) => {
        options.signal?.addEventListener("abort", () => (aborted = true), { once: true });
        return scripted.complete(request, options);
      },
    };
    const slowTrip: Guardrail = {
      name: "slow-check",
      mode: "parallel",
      check: async () => {
        await new Promise((resolve) => setTimeout(resolve, 50));
        return { verdict: "trip", reason: "not allowed" };
      },
    };
    const machine = createReactMachine({ modelClient: model, inputGuardrails: [slowTrip], configFile: false });
    const output = await runAgent(machine, { messages: [human("hello")] });
    expect(output.termination).toMatchObject({ reason: "guardrailTripped", guardrail: "slow-check" });
    // The call had started beside the guardrail, and was cancelled when it tripped.
    expect(scripted.requests).toHaveLength(1);
    expect(aborted).toBe(true);
  });

  it("an output guardrail's feedback goes to the model (an iteration); a guardrail that throws trips", async () => {
    const model = scriptedModel([{ content: "far too long an answer" }, { content: "short" }]);
    const machine = createReactMachine({ modelClient: model, outputGuardrails: [maxLength(10, { onHit: "retry" })], configFile: false });
    const output = await runAgent(machine, { messages: [human("answer")] });
    expect(output.status).toBe("succeeded");
    expect(output.finalAnswer).toBe("short");
    expect(model.requests[1]!.messages.at(-1)).toMatchObject({ role: "user" });

    const broken: Guardrail = { name: "broken", check: () => { throw new Error("boom"); } };
    const failing = createReactMachine({ modelClient: scriptedModel([{ content: "ok" }]), outputGuardrails: [broken], configFile: false });
    const failed = await runAgent(failing, { messages: [human("answer")] });
    expect(failed.termination?.reason).toBe("guardrailTripped");
  });
});

describe("deadline", () => {
  it("a run restored after its deadline fails (deadline) at once: the deadline is the original one", async () => {
    let clock = 1_000_000;
    const now = () => clock;
    const make = () =>
      createReactMachine({
        modelClient: scriptedModel([{ toolCalls: [{ id: "c1", name: "add", arguments: { a: 1, b: 2 } }] }, { content: "3" }]),
        tools: [add],
        constraints: [requireApproval({ tools: ["add"] })],
        config: { maxDurationMs: 60_000 },
        now,
        configFile: false,
      });
    const machine = make();
    const first = createActor(machine, { input: { messages: [human("add")], runId: "r" } });
    const saved = new Promise<ReturnType<typeof persistAgent>>((resolve) => first.on("guard.approval.requested", () => resolve(persistAgent(first, now))));
    first.start();
    const record = JSON.parse(JSON.stringify(await saved)) as unknown;
    first.stop();
    expect(JSON.stringify(record)).toContain(`"deadline":${1_000_000 + 60_000}`);

    // Restored a minute and a second later: a fresh deadline would be a minute away; the original has passed.
    clock += 61_000;
    const again = make();
    const second = createActor(again, { snapshot: restoreAgent(again, record) });
    second.start();
    const output = await toPromise(second);
    expect(output.termination?.reason).toBe("deadline");
  });

  it("a run saved before deadlines and guardrails existed restores into an agent with both, and keeps having no deadline", async () => {
    const saved = readFileSync(new URL("../fixtures/snapshots/v1/parked-for-approval.json", import.meta.url), "utf8");
    const runs: string[] = [];
    const record = defineTool({ name: "record", description: "Write a note", parameters: z.object({ note: z.string() }), execute: ({ note }) => (runs.push(note), `recorded ${note}`) });
    const machine = createReactMachine({
      name: "Parked",
      modelClient: scriptedModel([{ content: "Recorded." }]),
      tools: [record],
      constraints: [requireApproval({ tools: ["record"] })],
      inputGuardrails: [blocklist(["forbidden"])],
      outputGuardrails: [maxLength(100)],
      // A deadline invented at restore would be long gone after 1 ms: the run would fail (deadline).
      config: { maxDurationMs: 1, pricing: { scripted: { input: 1, output: 1 } } },
      configFile: false,
    });
    const actor = createActor(machine, { snapshot: restoreAgent(machine, JSON.parse(saved)) });
    actor.start();
    await new Promise((resolve) => setTimeout(resolve, 20));
    actor.send({ type: "guard.approve", callId: "call_rec" });
    const output = await toPromise(actor);
    expect(output).toMatchObject({ status: "succeeded", finalAnswer: "Recorded." });
    expect(runs).toEqual(["hello"]);
  });
});

describe("restore and guardrails", () => {
  /** A blocking input guardrail that counts its checks; `hold` keeps a check waiting until released. */
  function countingGuardrail(hold: boolean) {
    const state = { checks: 0, release: () => {}, checking: undefined as Promise<void> | undefined };
    let started!: () => void;
    state.checking = new Promise<void>((resolve) => (started = resolve));
    const guardrail: Guardrail = {
      name: "slow-input-check",
      check: async (subject) => {
        state.checks += 1;
        started();
        if (hold) await new Promise<void>((resolve) => (state.release = resolve));
        return subject.text.includes("forbidden") ? { verdict: "trip", reason: "forbidden" } : { verdict: "pass" };
      },
    };
    return { guardrail, state };
  }

  const agentWith = (guardrail: Guardrail, model: ModelClient) => createReactMachine({ modelClient: model, inputGuardrails: [guardrail], configFile: false });

  it("a run saved while its blocking input guardrails were still checking re-runs them when restored: no model call sees an unchecked input", async () => {
    const first = countingGuardrail(true);
    const firstModel = scriptedModel([{ content: "never asked" }]);
    const actor = createActor(agentWith(first.guardrail, firstModel), { input: { messages: [human("hello")], runId: "restore-before" } });
    actor.start();
    await first.state.checking;
    expect(actor.getSnapshot().hasTag("guardrail")).toBe(true);
    const record = JSON.parse(JSON.stringify(persistAgent(actor))) as unknown;
    actor.stop();
    first.state.release();
    expect(firstModel.requests).toHaveLength(0);

    // Restored: the check runs again (it never answered), and only then is the model asked.
    const again = countingGuardrail(false);
    const model = scriptedModel([{ content: "hi" }]);
    const machine = agentWith(again.guardrail, model);
    const restored = createActor(machine, { snapshot: restoreAgent(machine, record) });
    restored.start();
    const output = await toPromise(restored);
    expect(again.state.checks).toBe(1);
    expect(output).toMatchObject({ status: "succeeded", finalAnswer: "hi" });
    expect(model.requests).toHaveLength(1);

    // ...and what it checks after the restore is the saved input: one it refuses still trips the run.
    const tripping = countingGuardrail(false);
    const saved = JSON.parse(JSON.stringify(record).replaceAll('"hello"', '"forbidden words"')) as unknown;
    const tripMachine = agentWith(tripping.guardrail, scriptedModel([{ content: "never asked" }]));
    const tripped = createActor(tripMachine, { snapshot: restoreAgent(tripMachine, saved) });
    tripped.start();
    expect((await toPromise(tripped)).termination).toMatchObject({ reason: "guardrailTripped", guardrail: "slow-input-check" });
  });

  it("a run saved after its blocking input guardrails passed does not run them again when restored", async () => {
    const first = countingGuardrail(false);
    // The model call is slow, so the run is saved in AgentLLM (a checkpoint), after the guardrails passed.
    const firstModel = scriptedModel([{ content: "too late", delayMs: 5_000 }]);
    const actor = createActor(agentWith(first.guardrail, firstModel), { input: { messages: [human("hello")], runId: "restore-after" } });
    const saved = new Promise<unknown>((resolve) => actor.on("reply.started", () => resolve(JSON.parse(JSON.stringify(persistAgent(actor))))));
    actor.start();
    const record = await saved;
    actor.stop();
    expect(first.state.checks).toBe(1);

    const again = countingGuardrail(false);
    const model = scriptedModel([{ toolCalls: [{ name: "add", arguments: { a: 1, b: 2 } }] }, { content: "3" }]);
    const machine = createReactMachine({ modelClient: model, tools: [add], inputGuardrails: [again.guardrail], configFile: false });
    const restored = createActor(machine, { snapshot: restoreAgent(machine, record) });
    restored.start();
    const output = await toPromise(restored);
    expect(output).toMatchObject({ status: "succeeded", finalAnswer: "3" });
    // Two rounds after the restore, and the input was not checked again in either.
    expect(model.requests).toHaveLength(2);
    expect(again.state.checks).toBe(0);
  });
});
