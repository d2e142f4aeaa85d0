import { assign, emit, enqueueActions, fromCallback, fromPromise, sendTo, setup } from "xstate";
import { ToolSet } from "jianmu";
import { applyReply, chartContext, chartGuards, chartOutput, loopEndStates, staticToolProviders, terminate, toolMessages } from "./chart.mjs";
import { jianmuTools, toolBodies } from "./tools.mjs";

/*
 * The chart designs `designs.mjs` and `inproc.mjs --designs` measure side by side (see designs.mjs for
 * what each one is). Bare XState around a `complete(messages)` model call and the floor's tool bodies.
 */

const toolInfo = ToolSet.empty().withTools(jianmuTools).info();

const runTools = (calls) => toolMessages(toolBodies, calls);
const allowAll = assign({ decisions: ({ context }) => context.actions.map((call) => ({ callId: call.id, name: call.function.name, status: "allowed" })) });
const applyOutcomes = assign({ messages: ({ context, event }) => [...context.messages, ...event.output] });

/**
 * A long-lived effect actor: it waits for `<kind>.request` events, runs one request at a time with
 * its own AbortController (released when it ends), answers `<kind>.done` / `<kind>.failed` with
 * sendBack, and aborts on `<kind>.abort`.
 */
function longLived(kind, run) {
  return fromCallback(({ sendBack, receive }) => {
    let current;
    receive((event) => {
      if (event.type === `${kind}.abort`) {
        current?.abort();
        current = undefined;
        return;
      }
      const controller = (current = new AbortController());
      run(event.input, controller.signal).then(
        (output) => {
          if (current !== controller) return;
          current = undefined;
          sendBack({ type: `${kind}.done`, output });
        },
        (error) => {
          if (current !== controller) return;
          current = undefined;
          sendBack({ type: `${kind}.failed`, error });
        },
      );
    });
    sendBack({ type: `${kind}.ready` });
    return () => current?.abort();
  });
}

/**
 * Whether anyone listens to the actor's emitted events. XState has no public way to ask: this reads
 * the listener map `actor.on()` fills (a private field of XState's Actor, present in 5.x), and counts
 * an actor whose map it cannot read as listened to, so a change in XState can only cost time, never
 * lose an event.
 */
export function listened(actor) {
  const listeners = actor.eventListeners;
  return !(listeners instanceof Map) || listeners.size > 0;
}

/** What jianmu adds to every telemetry event (machines/contract/events.ts). */
const stamp = (context) => ({ agent: "design", runId: "run", iteration: context.iteration, timestamp: Date.now() });

/**
 * The telemetry of one step as jianmu's chart emits it: one `enqueue.emit` per event, each a new
 * object with the agent's fields, from an action run on the step's outcome. `when` is "always"
 * (jianmu's chart today) or "listened" (only when `listened(self)`: no event is built otherwise).
 */
function telemetry(when, eventsOf) {
  return enqueueActions(({ context, event, self, enqueue }) => {
    if (when === "listened" && !listened(self)) return;
    const base = stamp(context);
    for (const item of eventsOf(event, context)) enqueue.emit(Object.assign({}, item, base));
  });
}

/** The model call's events (jianmu: model.call.started and .completed ride on the LLM step's result, then reply.completed). */
const modelEvents = (event) => [
  { type: "model.call.started", attempt: 1, model: "bench", endpoint: "bench" },
  { type: "model.call.completed", attempt: 1, model: "bench", endpoint: "bench", usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 }, finishReason: "stop", durationMs: 0 },
  { type: "reply.completed", toolCalls: event.output.toolCalls.length },
];
/** A batch's events: each call's start and end (jianmu: they ride on the executor's result). */
const toolEvents = (event) =>
  event.output.flatMap((message) => [
    { type: "tool.call.started", callId: message.tool_call_id, name: "lookup", arguments: "{}" },
    { type: "tool.call.completed", callId: message.tool_call_id, name: "lookup", durationMs: 0, output: message.content },
  ]);

/** A design's shape (its name without a telemetry suffix) and its telemetry: "none", "always" or "listened". */
function parseDesign(design) {
  const match = /^(.*?)(Telemetry|Listened)?$/.exec(design);
  return { shape: match[1], telemetryWhen: match[2] === "Telemetry" ? "always" : match[2] === "Listened" ? "listened" : "none" };
}

export function designMachine(design, complete) {
  const name = design;
  const target = (path) => `#${name}.${path}`;
  const { shape, telemetryWhen } = parseDesign(design);
  const guardActor = shape === "perRound" || shape === "longLived";
  const longLivedActors = shape === "longLived" || shape === "both";
  const fewer = shape === "fewerSteps";
  // Telemetry rides on the step's outcome, before the transition's own actions (as jianmu's settle actions do).
  const withTelemetry = (eventsOf, transition) =>
    telemetryWhen === "none" ? transition : { ...transition, actions: [telemetry(telemetryWhen, eventsOf), ...[transition.actions ?? []].flat()] };

  const agentLLM = {
    entry: [
      assign({ streamingOutput: "" }),
      telemetryWhen === "listened"
        ? enqueueActions(({ context, self, enqueue }) => listened(self) && enqueue.emit({ type: "reply.started", agent: name, round: context.rounds + 1 }))
        : emit(({ context }) => ({ type: "reply.started", agent: name, round: context.rounds + 1 })),
      ...(longLivedActors ? [sendTo(`${name}.llm`, ({ context }) => ({ type: "llm.request", input: { messages: context.messages, tools: context.tools } }))] : []),
    ],
    ...(longLivedActors ? { exit: sendTo(`${name}.llm`, { type: "llm.abort" }) } : {}),
  };
  const afterReply = (
    fewer
      ? [
          { guard: "hasToolCalls", target: "ToolExecutor", actions: "applyReply" },
          { guard: "doneNow", target: target("Succeeded"), actions: "applyReply" },
          { target: target("Evaluating"), reenter: true, actions: ["applyReply", "countIteration"] },
        ]
      : [
          { guard: "hasToolCalls", target: "ToolExecutor", actions: "applyReply" },
          { target: "StateCondition", actions: "applyReply" },
        ]
  ).map((transition) => withTelemetry(modelEvents, transition));
  const afterTools = withTelemetry(
    toolEvents,
    fewer
      ? { target: target("Evaluating"), reenter: true, actions: ["applyOutcomes", "countIteration"] }
      : { target: target("Evaluating.ChildRunning.StateCondition"), actions: "applyOutcomes" },
  );
  if (longLivedActors) agentLLM.on = { "llm.done": afterReply, "llm.failed": { target: target("Failed"), actions: terminate("modelError") } };
  else {
    agentLLM.invoke = {
      id: `${name}.llm`,
      src: "llm",
      input: ({ context }) => ({ messages: context.messages, tools: context.tools }),
      onDone: afterReply,
      onError: { target: target("Failed"), actions: terminate("modelError") },
    };
  }
  const preflight = guardActor
    ? {
        invoke: {
          id: `${name}.guard`,
          src: "guard",
          input: ({ context }) => ({ calls: context.actions }),
          onDone: { target: "Executing", actions: assign({ decisions: ({ event }) => event.output.decisions }) },
          onError: { target: target("Failed"), actions: terminate("internalError") },
        },
      }
    : { always: { target: "Executing", actions: allowAll } };
  const executing = longLivedActors
    ? {
        entry: sendTo(`${name}.toolExecutor`, ({ context }) => ({ type: "tools.request", input: { calls: context.actions } })),
        exit: sendTo(`${name}.toolExecutor`, { type: "tools.abort" }),
        on: { "tools.done": afterTools, "tools.failed": { target: target("Failed"), actions: terminate("internalError") } },
      }
    : {
        invoke: {
          id: `${name}.toolExecutor`,
          src: "toolExecutor",
          input: ({ context }) => ({ calls: context.actions }),
          onDone: afterTools,
          onError: { target: target("Failed"), actions: terminate("internalError") },
        },
      };

  const evaluating = fewer
    ? {
        entry: assign({ actions: [], decisions: [] }),
        initial: "ChildRunning",
        states: {
          ChildRunning: { initial: "AgentLLM", states: { AgentLLM: agentLLM, ToolExecutor: { initial: "Preflight", states: { Preflight: preflight, Executing: executing } } } },
        },
      }
    : {
        entry: assign({ actions: [], decisions: [] }),
        initial: "CheckAbort",
        states: {
          CheckAbort: { always: [{ guard: "budgetSpent", target: target("Failed") }, { target: "ChildRunning" }] },
          ChildRunning: {
            initial: "AgentLLM",
            states: {
              AgentLLM: agentLLM,
              ToolExecutor: { initial: "Preflight", states: { Preflight: preflight, Executing: executing } },
              StateCondition: { always: [{ guard: "isDone", target: target("Succeeded") }, { target: target("CheckBudget") }] },
            },
          },
        },
      };

  return setup({
    actors: {
      toolProviders: staticToolProviders(toolInfo),
      llm: longLivedActors ? longLived("llm", (input) => complete(input.messages)) : fromPromise(({ input }) => complete(input.messages)),
      guard: fromPromise(async ({ input }) => ({ decisions: input.calls.map((call) => ({ callId: call.id, name: call.function.name, status: "allowed" })) })),
      toolExecutor: longLivedActors ? longLived("tools", (input) => runTools(input.calls)) : fromPromise(({ input }) => runTools(input.calls)),
    },
    actions: { applyReply, applyOutcomes, countIteration: assign({ iteration: ({ context }) => context.iteration + 1 }) },
    guards: { ...chartGuards, doneNow: ({ event }) => event.output.toolCalls.length === 0 },
  }).createMachine({
    id: name,
    context: chartContext,
    initial: "Initialising",
    invoke: [
      { id: `${name}.toolProviders`, src: "toolProviders" },
      ...(longLivedActors
        ? [
            { id: `${name}.llm`, src: "llm" },
            { id: `${name}.toolExecutor`, src: "toolExecutor" },
          ]
        : []),
    ],
    states: {
      Initialising: { on: { "tools.ready": { target: "Evaluating", actions: assign({ tools: ({ event }) => event.tools }) } } },
      Evaluating: evaluating,
      ...loopEndStates,
    },
    output: chartOutput,
  });
}

/** The least XState does for a ReAct loop: Thinking (llm) ⇄ Acting (tools), two fromPromise actors per round. */
export function twoStateMachine(complete) {
  return setup({
    actors: { llm: fromPromise(({ input }) => complete(input.messages)), tools: fromPromise(({ input }) => runTools(input.calls)) },
    actions: { applyReply, applyOutcomes },
  }).createMachine({
    id: "twoStates",
    context: chartContext,
    initial: "Thinking",
    states: {
      Thinking: {
        invoke: {
          src: "llm",
          input: ({ context }) => ({ messages: context.messages }),
          onDone: [{ guard: ({ event }) => event.output.toolCalls.length > 0, target: "Acting", actions: "applyReply" }, { target: "Done", actions: "applyReply" }],
          onError: "Done",
        },
      },
      Acting: { invoke: { src: "tools", input: ({ context }) => ({ calls: context.actions }), onDone: { target: "Thinking", actions: "applyOutcomes" }, onError: "Done" } },
      Done: { type: "final" },
    },
    output: ({ context }) => ({ status: "succeeded", finalAnswer: context.finalAnswer }),
  });
}

export const DESIGNS = ["perRound", "noGuard", "longLived", "both", "fewerSteps", "twoStates", "noGuardTelemetry", "noGuardListened", "bothTelemetry", "bothListened"];

/** The machine of `design` around `complete`. */
export const designChart = (design, complete) => (design === "twoStates" ? twoStateMachine(complete) : designMachine(design, complete));
