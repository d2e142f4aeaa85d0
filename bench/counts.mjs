import { createActor, toPromise } from "xstate";
import { human, runAgent } from "jianmu";
import { createChart, createJianmu, firstMessages } from "./contenders.mjs";
import { memoryEndpoint } from "./memory-fetch.mjs";
import { BENCH_PROMPT, parseTaskModel, finalAnswer, taskModel } from "./task.mjs";

/*
 * What one K=10 P=1 run does, counted instead of timed (so the figures do not move with the
 * machine's load): XState actions, microsteps, events delivered, actors started, and the
 * AbortControllers and timers created, for jianmu and the bare chart (chart.mjs).
 *
 *   node --import ./bench/count-hooks.mjs bench/counts.mjs [--stream] [--k N] [--by-type]
 *
 * "actions resolved" counts every built-in action XState resolves (assign, enqueueActions, emit,
 * spawnChild, stopChild; count-hooks.mjs); "deferred" only those an inspector sees (emit, spawn,
 * stop). The other columns come from an inspector on the run's actor. An inspected actor can be
 * listened to, so jianmu builds its telemetry there; the "runAgent unheard" row is a `runAgent`
 * without listeners (machines/chart/audience.ts), which no inspector can watch.
 */

const argv = process.argv.slice(2);
const option = (name) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : undefined);
const stream = argv.includes("--stream");
const task = { k: Number(option("--k") ?? 10), p: 1 };
const model = taskModel(task);
const expected = finalAnswer(parseTaskModel(model));
const endpoint = memoryEndpoint(model, stream);

/** Count AbortControllers and timers made while `run` runs (one run at a time). */
async function countingGlobals(run) {
  const counts = { controllers: 0, timers: 0 };
  const Controller = globalThis.AbortController;
  const setTimer = globalThis.setTimeout;
  globalThis.AbortController = class extends Controller {
    constructor() {
      super();
      counts.controllers++;
    }
  };
  globalThis.setTimeout = (...args) => (counts.timers++, setTimer(...args));
  try {
    await run();
  } finally {
    globalThis.AbortController = Controller;
    globalThis.setTimeout = setTimer;
  }
  return counts;
}

/** The run's counts: `resolved` from count-hooks.mjs, the rest from the inspector. */
function inspector() {
  const counts = { resolved: 0, resolvedEmits: 0, actions: 0, emits: 0, microsteps: 0, events: 0, actors: 0, byType: new Map() };
  globalThis.__xstateResolved = (type, name) => {
    counts.resolved++;
    if (type === "xstate.emit") counts.resolvedEmits++;
    const key = name === type ? type : `${name} (${type})`;
    counts.byType.set(key, (counts.byType.get(key) ?? 0) + 1);
  };
  const inspect = (event) => {
    if (event.type === "@xstate.action") {
      counts.actions++;
      const type = event.action.type;
      if (type === "xstate.emit") counts.emits++;
    } else if (event.type === "@xstate.microstep") counts.microsteps++;
    else if (event.type === "@xstate.event") counts.events++;
    else if (event.type === "@xstate.actor") counts.actors++;
  };
  return { counts, inspect };
}

async function countJianmu() {
  const { machine } = createJianmu(endpoint);
  const { counts, inspect } = inspector();
  const globals = await countingGlobals(async () => {
    const actor = createActor(machine, { input: { messages: [human(BENCH_PROMPT)] }, inspect });
    actor.start();
    const output = await toPromise(actor);
    if (output.finalAnswer !== expected) throw new Error(`jianmu answered ${output.finalAnswer}`);
  });
  return { ...counts, ...globals };
}

/** `runAgent` with no listener: its telemetry is not built (machines/chart/audience.ts), and no inspector sees it. */
async function countUnheard() {
  const { machine } = createJianmu(endpoint);
  const { counts } = inspector();
  const globals = await countingGlobals(async () => {
    const output = await runAgent(machine, { messages: [human(BENCH_PROMPT)] });
    if (output.finalAnswer !== expected) throw new Error(`jianmu answered ${output.finalAnswer}`);
  });
  return { ...counts, microsteps: "", events: "", actors: "", ...globals };
}

async function countChart() {
  const { machine } = createChart(endpoint);
  const { counts, inspect } = inspector();
  const globals = await countingGlobals(async () => {
    const actor = createActor(machine, { input: { messages: firstMessages(BENCH_PROMPT) }, inspect });
    actor.start();
    await toPromise(actor);
  });
  return { ...counts, ...globals };
}

// One warm run each first (module-level caches, the SDK's first request), then the counted one.
await countJianmu();
await countUnheard();
await countChart();
const rows = { jianmu: await countJianmu(), "jianmu, runAgent unheard": await countUnheard(), chart: await countChart() };
console.log(`Per K=${task.k} P=1 run, ${stream ? "streaming" : "non-streaming"}, counted with an inspector:`);
console.log("| contender | actions resolved | of them emits | deferred (inspected) | microsteps | events | actors | AbortControllers | timers |");
console.log("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
for (const [name, c] of Object.entries(rows)) {
  console.log(`| ${name} | ${c.resolved} | ${c.resolvedEmits} | ${c.actions} | ${c.microsteps} | ${c.events} | ${c.actors} | ${c.controllers} | ${c.timers} |`);
}
if (argv.includes("--by-type")) {
  for (const [name, c] of Object.entries(rows)) console.log(name, Object.fromEntries([...c.byType].sort((a, b) => b[1] - a[1])));
}
