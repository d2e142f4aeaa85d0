import { createActor, toPromise } from "xstate";
import { DESIGNS, designChart } from "./design-charts.mjs";
import { createFloor, firstMessages, sdkCompletion } from "./contenders.mjs";
import { interleaved, median, runPool, timed } from "./measure.mjs";
import { startServer } from "./processes.mjs";
import { BENCH_PROMPT, finalAnswer, parseTaskModel, taskModel } from "./task.mjs";

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
const THROUGHPUT_REPS = 4;
const THROUGHPUT_RUNS = 200;

function contender(design, baseURL, model, expected) {
  const complete = sdkCompletion({ baseURL, model, stream });
  const machine = designChart(design, complete);
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
