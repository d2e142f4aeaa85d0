import { assign, createActor, emit, enqueueActions, fromCallback, fromPromise, sendTo, setup, toPromise } from "xstate";
import { applyReply, chartContext, chartOutput, terminate, toolMessages } from "./chart.mjs";
import { createFloor, firstMessages, sdkCompletion } from "./contenders.mjs";
import { interleaved, median, runPool, timed } from "./measure.mjs";
import { startServer } from "./processes.mjs";
import { BENCH_PROMPT, finalAnswer, parseTaskModel, taskModel } from "./task.mjs";
import { jianmuTools, toolBodies } from "./tools.mjs";
import { ToolSet } from "jianmu";

/*
 * Designs of the agent's chart measured side by side: `node bench/designs.mjs [reps] [--stream]`.
 *
 * Every design is bare XState around the floor's SDK call and tool bodies (like chart.mjs: not a
 * line of jianmu), keeps every state of the contract that a K=10, P=1 run walks through
 * (Initialising, Evaluating { CheckAbort, ChildRunning { AgentLLM, ToolExecutor { Preflight,
 * Executing }, StateCondition } }, CheckBudget, Retry, Succeeded) unless its name says otherwise,
 * and differs only in how a round's effects are run:
 *
 *   perRound     three actors invoked per round: llm (AgentLLM), guard (Preflight), toolExecutor
 *                (Executing), as jianmu's chart did before issue 19
 *   noGuard      no guard actor: Preflight allows the batch in an action (an agent without constraints)
 *   longLived    llm and toolExecutor are long-lived fromCallback actors at the root, driven by
 *                request events (entry sends the request, exit sends an abort), answering with sendBack
 *   both         noGuard + longLived
 *   fewerSteps   noGuard, and no CheckAbort/Retry/StateCondition eventless steps (their guards run on
 *                the transitions instead): the contract's states are gone, so this is a yardstick only
 *   twoStates    a minimal two-state loop with two fromPromise actors per round: the least XState
 *                can do for a ReAct loop
 *
 * Against the instant bench server, all in one process, taking turns run by run (`interleaved`),
 * median wall and CPU time of a K=10 run and throughput with 100 runs in flight, as ratios to the
 * floor. The numbers and the verdict are in bench/README.md ("Designs measured").
 */

const argv = process.argv.slice(2);
const reps = Number(argv.find((a) => /^\d+$/.test(a)) ?? 300);
const stream = argv.includes("--stream");
const MAX_ITERATIONS = 50;
const THROUGHPUT_REPS = 4;
const THROUGHPUT_RUNS = 200;

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

function designMachine(design, complete) {
  const name = design;
  const target = (path) => `#${name}.${path}`;
  const guardActor = design === "perRound" || design === "longLived";
  const longLivedActors = design === "longLived" || design === "both";
  const fewer = design === "fewerSteps";

  const agentLLM = {
    entry: [
      assign({ streamingOutput: "" }),
      emit(({ context }) => ({ type: "reply.started", agent: name, round: context.rounds + 1 })),
      ...(longLivedActors ? [sendTo(`${name}.llm`, ({ context }) => ({ type: "llm.request", input: { messages: context.messages, tools: context.tools } }))] : []),
    ],
    ...(longLivedActors ? { exit: sendTo(`${name}.llm`, { type: "llm.abort" }) } : {}),
  };
  const afterReply = fewer
    ? [
        { guard: "hasToolCalls", target: "ToolExecutor", actions: "applyReply" },
        { guard: "doneNow", target: target("Succeeded"), actions: "applyReply" },
        { target: target("Evaluating"), reenter: true, actions: ["applyReply", "countIteration"] },
      ]
    : [
        { guard: "hasToolCalls", target: "ToolExecutor", actions: "applyReply" },
        { target: "StateCondition", actions: "applyReply" },
      ];
  const afterTools = fewer
    ? { target: target("Evaluating"), reenter: true, actions: ["applyOutcomes", "countIteration"] }
    : { target: target("Evaluating.ChildRunning.StateCondition"), actions: "applyOutcomes" };
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
      toolProviders: fromCallback(({ sendBack }) => {
        let live = true;
        queueMicrotask(() => live && sendBack({ type: "tools.ready", tools: toolInfo }));
        return () => {
          live = false;
        };
      }),
      llm: longLivedActors ? longLived("llm", (input) => complete(input.messages)) : fromPromise(({ input }) => complete(input.messages)),
      guard: fromPromise(async ({ input }) => ({ decisions: input.calls.map((call) => ({ callId: call.id, name: call.function.name, status: "allowed" })) })),
      toolExecutor: longLivedActors ? longLived("tools", (input) => runTools(input.calls)) : fromPromise(({ input }) => runTools(input.calls)),
    },
    actions: { applyReply, applyOutcomes, countIteration: assign({ iteration: ({ context }) => context.iteration + 1 }) },
    guards: {
      budgetSpent: () => false,
      hasToolCalls: ({ event }) => event.output.toolCalls.length > 0,
      doneNow: ({ event }) => event.output.toolCalls.length === 0,
      isDone: ({ context }) => context.done,
      iterationsLeft: ({ context }) => context.iteration < MAX_ITERATIONS,
    },
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
      CheckBudget: {
        entry: assign({ iteration: ({ context }) => context.iteration + 1 }),
        always: [{ guard: "iterationsLeft", target: "Retry" }, { target: "Failed", actions: assign({ termination: { reason: "maxIterations" } }) }],
      },
      Retry: { always: "Evaluating" },
      Succeeded: { type: "final" },
      Failed: { type: "final" },
    },
    output: chartOutput,
  });
}

/** The least XState does for a ReAct loop: Thinking (llm) ⇄ Acting (tools), two fromPromise actors per round. */
function twoStateMachine(complete) {
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

const DESIGNS = ["perRound", "noGuard", "longLived", "both", "fewerSteps", "twoStates"];

function contender(design, baseURL, model, expected) {
  const complete = sdkCompletion({ baseURL, model, stream });
  const machine = design === "twoStates" ? twoStateMachine(complete) : designMachine(design, complete);
  return async () => {
    const actor = createActor(machine, { input: { messages: firstMessages(BENCH_PROMPT) } });
    actor.start();
    const output = await toPromise(actor);
    if (output.finalAnswer !== expected) throw new Error(`${design} answered ${JSON.stringify(output.finalAnswer)} (${output.status}, ${JSON.stringify(output.termination)})`);
  };
}

const stderr = [];
const server = startServer(stderr);
try {
  await server.ready;
  const baseURL = await server.restart();
  const task = { k: 10, p: 1 };
  const model = taskModel(task);
  const expected = finalAnswer(parseTaskModel(model));
  const floor = createFloor({ baseURL, model, stream });
  const runs = {
    floor: async () => {
      if ((await floor.run()) !== expected) throw new Error("floor: wrong answer");
    },
    ...Object.fromEntries(DESIGNS.map((design) => [design, contender(design, baseURL, model, expected)])),
  };
  const names = Object.keys(runs);
  for (let i = 0; i < 50; i++) for (const name of names) await runs[name]();
  console.error("warmed up; measuring latency");
  const wall = Object.fromEntries(names.map((n) => [n, []]));
  const cpu = Object.fromEntries(names.map((n) => [n, []]));
  for (let rep = 0; rep < reps; rep++) {
    for (const name of interleaved(rep, names)) {
      const sample = await timed(runs[name]);
      wall[name].push(sample.wallMs);
      cpu[name].push(sample.cpuMs);
    }
  }
  const rates = Object.fromEntries(names.map((n) => [n, []]));
  // A contender's idle keep-alive sockets may be closed by the server while the others take their
  // turn; a run that meets one is run again (and counted), so one stale socket cannot end the bench.
  let rerun = 0;
  const retried = (run) => () => run().catch(() => (rerun++, run()));
  // Each contender's own HTTP client opens its 100 sockets before it is timed.
  for (const name of names) {
    console.error(`warming ${name} with 100 in flight`);
    await runPool(100, 100, retried(runs[name]));
  }
  for (let rep = 0; rep < THROUGHPUT_REPS; rep++) {
    for (const name of interleaved(rep, names)) {
      const { wallMs } = await timed(() => runPool(THROUGHPUT_RUNS, 100, retried(runs[name])));
      rates[name].push(THROUGHPUT_RUNS / (wallMs / 1000));
    }
  }
  const base = { wall: median(wall.floor), cpu: median(cpu.floor), rate: median(rates.floor) };
  console.log(`K=10, P=1, ${stream ? "streaming" : "non-streaming"}; ${reps} interleaved runs each (latency), ${THROUGHPUT_REPS} × ${THROUGHPUT_RUNS} runs with 100 in flight (throughput)`);
  if (rerun > 0) console.log(`(${rerun} throughput runs met a closed socket and ran again)`);
  console.log("| design | wall / floor | CPU / floor | added wall per model call | throughput / floor |");
  console.log("|---|---|---|---|---|");
  for (const name of names) {
    const w = median(wall[name]);
    const c = median(cpu[name]);
    const r = median(rates[name]);
    const perCall = ((w - base.wall) * 1000) / (task.k + 1);
    console.log(`| ${name} | ${(w / base.wall).toFixed(2)}× | ${(c / base.cpu).toFixed(2)}× | ${name === "floor" ? "-" : `${perCall.toFixed(0)} µs`} | ${(r / base.rate).toFixed(2)}× |`);
  }
} finally {
  await server.stop();
}
