import { describe, expect, it } from "vitest";
import { createActor, fromCallback, fromPromise, toPromise, waitFor } from "xstate";
import { z } from "zod";
import type { LLMInput, LLMOutput } from "../../actors/llm-step.js";
import { human } from "../../actors/messages.js";
import type { ModelCallOptions, ModelRequest, ModelTurn } from "../../actors/model-client.js";
import { defineGuardrail } from "../../actors/guardrail.js";
import { StepLogicError } from "../../actors/step-host.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { defineTool } from "../../tools/tool.js";
import { scriptedModel } from "../../testing/scripted-model.js";

/** A model whose calls wait until released; counts them and keeps each call's cancellation. */
function heldModel() {
  const calls: { request: ModelRequest; options: ModelCallOptions; release: (turn: ModelTurn) => void }[] = [];
  return {
    calls,
    client: {
      description: "held",
      model: "held",
      complete: (request: ModelRequest, options: ModelCallOptions = {}) =>
        new Promise<ModelTurn>((resolve) => calls.push({ request, options, release: resolve })),
    },
  };
}

/** An agent started on a held model, once its first model call is under way. */
async function inFirstModelCall(options: Partial<Parameters<typeof createReactMachine>[0]> = {}) {
  const model = heldModel();
  const machine = createReactMachine({ modelClient: model.client, configFile: false, ...options });
  const actor = createActor(machine, { input: { messages: [human("hi")] } }).start();
  await waitFor(actor, inModelCall);
  await new Promise((resolve) => setTimeout(resolve, 0));
  expect(model.calls).toHaveLength(1);
  return { model, actor };
}

const answer = (content: string): ModelTurn => ({ content, toolCalls: [], usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2 }, finishReason: "stop", model: "held" });
const inModelCall = (snapshot: { matches: (value: object) => boolean }) => snapshot.matches({ Evaluating: { ChildRunning: "AgentLLM" } });

describe("the step host", () => {
  it("runs the model call and the tool batch of every round in one actor for the whole run", async () => {
    const add = defineTool({ name: "add", description: "Add", parameters: z.object({ a: z.number(), b: z.number() }), execute: ({ a, b }) => a + b });
    const machine = createReactMachine({
      modelClient: scriptedModel([{ toolCalls: [{ id: "c1", name: "add", arguments: { a: 1, b: 2 } }] }, { content: "3" }]),
      tools: [add],
      configFile: false,
    });
    const actor = createActor(machine, { input: { messages: [human("1 + 2?")] } });
    const children = new Set<string>();
    actor.subscribe((snapshot) => Object.keys(snapshot.children).forEach((id) => children.add(id)));
    actor.start();
    const output = await toPromise(actor);
    expect(output.finalAnswer).toBe("3");
    expect(output.messages.at(2)).toMatchObject({ role: "tool", content: "3" });
    // No child per model call or batch: the host (and, in Initialising, the providers' actor) only.
    expect([...children].sort()).toEqual(["ReActAgent.steps", "ReActAgent.toolProviders"]);
  });

  it("runs a provided fromPromise `llm` per request, with its input and a signal", async () => {
    const seen: { rounds: number; signal: boolean }[] = [];
    const llm = fromPromise<LLMOutput, LLMInput>(async ({ input, signal }) => {
      seen.push({ rounds: input.rounds, signal: signal instanceof AbortSignal });
      return answer(`round ${input.rounds}`);
    });
    const machine = createReactMachine({ modelClient: scriptedModel([]), configFile: false }).provide({ actors: { llm } });
    const output = await toPromise(createActor(machine, { input: { messages: [human("hi")] } }).start());
    expect(output.finalAnswer).toBe("round 0");
    expect(seen).toEqual([{ rounds: 0, signal: true }]);
  });

  it("fails the run, naming the field, when the provided step is not promise logic", async () => {
    const llm = fromCallback(() => undefined);
    const machine = createReactMachine({ modelClient: scriptedModel([]), configFile: false }).provide({ actors: { llm: llm as never } });
    const output = await toPromise(createActor(machine, { input: { messages: [human("hi")] } }).start());
    expect(output.status).toBe("failed");
    expect(output.termination?.reason).toBe("modelError");
    expect(output.termination?.error?.name).toBe(new StepLogicError("").name);
    expect(output.termination?.error?.message).toMatch(/^actors\.llm: the step must be promise logic, made with fromPromise/);
  });

  it("stops the model call when the run leaves AgentLLM before its answer, and drops the late answer", async () => {
    const { model, actor } = await inFirstModelCall();
    const cancellation = model.calls[0]!.options.cancellation!;
    expect(cancellation.aborted).toBe(false);
    actor.send({ type: "agent.cancel", reason: "enough" });
    expect(actor.getSnapshot().value).toBe("Failed");
    expect(cancellation.aborted).toBe(true);
    model.calls[0]!.release(answer("too late"));
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(actor.getSnapshot().output).toMatchObject({ status: "failed", termination: { reason: "cancelled" }, finalAnswer: null });
  });

  it("asked again when it (re)starts, a host already running the step does not run it twice", async () => {
    const { model, actor } = await inFirstModelCall();
    // What a restored run's host says when it starts: AgentLLM asks again, marked as a repeat.
    actor.send({ type: "steps.ready" } as never);
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(model.calls).toHaveLength(1);
    model.calls[0]!.release(answer("once"));
    const output = await toPromise(actor);
    expect(output.finalAnswer).toBe("once");
    expect(model.calls).toHaveLength(1);
  });

  it("the parallel input guardrails asking for another try mid-call: the stale call stops, its late answer is dropped, the next is asked", async () => {
    let verdict: (outcome: { verdict: "retry"; feedback: string }) => void = () => undefined;
    const watcher = defineGuardrail({ name: "watcher", mode: "parallel", check: () => new Promise((resolve) => (verdict = resolve)) });
    const { model, actor } = await inFirstModelCall({ inputGuardrails: [watcher] });
    verdict({ verdict: "retry", feedback: "say it differently" });
    await new Promise((resolve) => setTimeout(resolve, 10));
    // The first call was stopped when the round was left; the next iteration asked again.
    expect(model.calls[0]!.options.cancellation!.aborted).toBe(true);
    expect(model.calls).toHaveLength(2);
    model.calls[0]!.release(answer("stale"));
    model.calls[1]!.release(answer("fresh"));
    const output = await toPromise(actor);
    expect(output.finalAnswer).toBe("fresh");
  });
});
