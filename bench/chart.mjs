import { assign, createActor, emit, fromCallback, sendTo, setup, toPromise } from "xstate";

/*
 * The reference contender `chart`: jianmu's statechart rebuilt in bare XState, with no jianmu
 * code in it. Same states, the same transitions and the same actors at the same places (the step
 * host at the root, asked for the model call by AgentLLM and for the batch by Executing: see
 * machines/react-machine.ts and docs/ARCHITECTURE.md), but each step does only what the
 * floor does: the model step is the floor's raw SDK call, Preflight allows every call in an action
 * (as jianmu's does for an agent without constraints: no guard actor), the tool executor runs the
 * floor's tool bodies in parallel. No validation, no progress events, no
 * telemetry beyond `reply.started`, no state schema. Its cost over the floor is what XState's
 * interpreter costs for this chart shape; jianmu's cost over it is jianmu's own code.
 *
 * Left out of the shape: AwaitingApproval (jianmu's chart has none without constraints) and the
 * root's agent.cancel / tools.failed handlers (never sent here).
 */

const MAX_ITERATIONS = 50;
/** Like jianmu's default config: no token budget, so the CheckAbort guard is evaluated and passes. */
const MAX_BUDGET_TOKENS = undefined;

/** Run a batch's calls with the floor's tool bodies, in parallel: their tool messages, in call order. */
export const toolMessages = (toolBodies, calls) =>
  Promise.all(
    calls.map(async (call) => ({ role: "tool", tool_call_id: call.id, content: String(await toolBodies[call.function.name](JSON.parse(call.function.arguments))) })),
  );

/** The model's reply joins the conversation; no tool calls means done, with the reply as the answer. */
export const applyReply = assign(({ context, event }) => {
  const { content, toolCalls } = event.output;
  const done = toolCalls.length === 0;
  return {
    rounds: context.rounds + 1,
    actions: toolCalls,
    done,
    finalAnswer: done ? content : null,
    messages: [...context.messages, { role: "assistant", content: content === "" ? null : content, ...(done ? {} : { tool_calls: toolCalls }) }],
  };
});

/** The run fails with `reason`, keeping the failed actor's error. */
export const terminate = (reason) => assign(({ event }) => ({ termination: { reason, error: String(event.error?.message ?? event.error) } }));

/** The chart's named guards (design-charts.mjs uses them too). */
export const chartGuards = {
  budgetSpent: ({ context }) => MAX_BUDGET_TOKENS !== undefined && context.totalTokens >= MAX_BUDGET_TOKENS,
  hasToolCalls: ({ event }) => event.output.toolCalls.length > 0,
  isDone: ({ context }) => context.done,
  iterationsLeft: ({ context }) => context.iteration < MAX_ITERATIONS,
};

/** The root's `toolProviders` actor for tools known up front: `tools.ready` once started, like jianmu's. */
export const staticToolProviders = (toolInfo) =>
  fromCallback(({ sendBack }) => {
    let live = true;
    queueMicrotask(() => live && sendBack({ type: "tools.ready", tools: toolInfo }));
    return () => {
      live = false;
    };
  });

/** CheckBudget, Retry and the two final states, as every chart shape here has them (guard `iterationsLeft`). */
export const loopEndStates = {
  CheckBudget: {
    entry: assign({ iteration: ({ context }) => context.iteration + 1 }),
    always: [{ guard: "iterationsLeft", target: "Retry" }, { target: "Failed", actions: assign({ termination: { reason: "maxIterations" } }) }],
  },
  Retry: { always: "Evaluating" },
  Succeeded: { type: "final" },
  Failed: { type: "final" },
};

/**
 * The run's step host, as jianmu's (actors/step-host.ts) without its code: one actor for the run that
 * runs `steps[step](input)` per `step.request`, stops it on `step.abort`, answers `<step>.done` /
 * `<step>.error`, and says `steps.ready` when it starts.
 */
export const bareStepHost = (steps) =>
  fromCallback(({ sendBack, receive }) => {
    const running = new Map();
    receive((event) => {
      if (event.type === "step.abort") return void running.delete(event.step);
      if (event.type !== "step.request" || (event.again && running.has(event.step))) return;
      const token = {};
      running.set(event.step, token);
      const current = () => running.get(event.step) === token;
      Promise.resolve(steps[event.step](event.input)).then(
        (output) => current() && (running.delete(event.step), sendBack({ type: `${event.step}.done`, output })),
        (error) => current() && (running.delete(event.step), sendBack({ type: `${event.step}.error`, error })),
      );
    });
    sendBack({ type: "steps.ready" });
    return () => running.clear();
  });

/**
 * Ask the step host for `step` (`input` from the context), again on `steps.ready`. Like jianmu's
 * chart without parallel input guardrails, the states have no exit action: every way out before the
 * answer ends the run, which stops the host.
 */
export const askStep = (host, step, input) => sendTo(host, ({ context }, params) => ({ type: "step.request", step, input: input(context), ...params }));

/** A fresh run's context: the prompt's messages and the loop's bookkeeping. */
export const chartContext = ({ input }) => ({
  messages: input.messages,
  tools: [],
  iteration: 0,
  rounds: 0,
  totalTokens: 0,
  actions: [],
  decisions: [],
  streamingOutput: "",
  done: false,
  finalAnswer: null,
  termination: null,
});

export const chartOutput = ({ context }) => ({ status: context.termination ? "failed" : "succeeded", finalAnswer: context.finalAnswer, termination: context.termination });

/**
 * @param {{
 *   name?: string,
 *   complete: (messages: object[]) => Promise<{ content: string, toolCalls: object[] }>,
 *   toolBodies: Record<string, (args: any) => unknown>,
 *   toolInfo: object[],
 * }} options
 */
export function createChartMachine({ name = "chart", complete, toolBodies, toolInfo }) {
  const target = (path) => `#${name}.${path}`;
  const host = `${name}.steps`;

  return setup({
    actors: {
      toolProviders: staticToolProviders(toolInfo),
      steps: bareStepHost({ llm: (input) => complete(input.messages), toolExecutor: (input) => toolMessages(toolBodies, input.calls) }),
    },
    actions: {
      applyReply,
      requestReply: askStep(host, "llm", (context) => ({ messages: context.messages, tools: context.tools })),
      requestBatch: askStep(host, "toolExecutor", (context) => ({ calls: context.actions })),
    },
    guards: chartGuards,
  }).createMachine({
    id: name,
    context: chartContext,
    initial: "Initialising",
    invoke: [
      { id: host, src: "steps" },
      { id: `${name}.toolProviders`, src: "toolProviders" },
    ],
    states: {
      Initialising: {
        on: { "tools.ready": { target: "Evaluating", actions: assign({ tools: ({ event }) => event.tools }) } },
      },
      Evaluating: {
        entry: assign({ actions: [], decisions: [] }),
        initial: "CheckAbort",
        states: {
          CheckAbort: {
            always: [{ guard: "budgetSpent", target: target("Failed"), actions: terminate("tokenBudget") }, { target: "ChildRunning" }],
          },
          ChildRunning: {
            initial: "AgentLLM",
            states: {
              AgentLLM: {
                entry: [assign({ streamingOutput: "" }), emit(({ context }) => ({ type: "reply.started", agent: name, round: context.rounds + 1 })), "requestReply"],
                on: {
                  "llm.done": [
                    { guard: "hasToolCalls", target: "ToolExecutor", actions: "applyReply" },
                    { target: "StateCondition", actions: "applyReply" },
                  ],
                  "llm.error": { target: target("Failed"), actions: terminate("modelError") },
                  "steps.ready": { actions: { type: "requestReply", params: { again: true } } },
                },
              },
              ToolExecutor: {
                initial: "Preflight",
                states: {
                  // Like jianmu's chart for an agent without constraints: no guard actor, every call allowed in an action.
                  Preflight: {
                    always: {
                      target: "Executing",
                      actions: assign({ decisions: ({ context }) => context.actions.map((call) => ({ callId: call.id, name: call.function.name, status: "allowed" })) }),
                    },
                  },
                  Executing: {
                    entry: "requestBatch",
                    on: {
                      "toolExecutor.done": {
                        target: target("Evaluating.ChildRunning.StateCondition"),
                        actions: assign({ messages: ({ context, event }) => [...context.messages, ...event.output] }),
                      },
                      "toolExecutor.error": { target: target("Failed"), actions: terminate("internalError") },
                      "steps.ready": { actions: { type: "requestBatch", params: { again: true } } },
                    },
                  },
                },
              },
              StateCondition: {
                always: [{ guard: "isDone", target: target("Succeeded") }, { target: target("CheckBudget") }],
              },
            },
          },
        },
      },
      ...loopEndStates,
    },
    output: chartOutput,
  });
}

/** One run: start an actor with the prompt's messages and wait for its output. */
export async function runChart(machine, messages) {
  const actor = createActor(machine, { input: { messages } });
  actor.start();
  return toPromise(actor);
}
