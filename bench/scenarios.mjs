import { createActor, waitFor } from "xstate";
import { ai, human, persistAgent, requireApproval, restoreAgent, runStatusOf, statePath, toolMessage } from "jianmu";
import { CONTENDERS, createJianmu } from "./contenders.mjs";
import { interleaved, median, percentile, runPool, settledMemory, slope, timed } from "./measure.mjs";
import { arrivalTiming, MEMORY_BASE_URL, memoryFetch } from "./memory-fetch.mjs";
import { finalAnswer, parseTaskModel, taskModel } from "./task.mjs";
import { takeSleepCalls } from "./tools.mjs";

/*
 * Each scenario runs in a client process of its own (see client.mjs) against the server process,
 * and returns plain numbers. Where contenders share a process they alternate, repetition by
 * repetition, so that drift (other load on the machine, JIT warm-up, GC) hits them alike.
 */

/** The contenders: the floor, jianmu and the Vercel AI SDK. */
export const NAMES = ["floor", "jianmu", "aisdk"];
/** Persisting a paused run: the AI SDK keeps no run state to save (its messages are the floor's). */
const PERSISTED = ["floor", "jianmu"];
/** The timing scenarios also run the reference `chart` (jianmu's chart in bare XState). */
const WITH_CHART = ["floor", "chart", "jianmu", "aisdk"];

function build(task, { baseURL, stream, fetch }, names = NAMES) {
  const model = taskModel(task);
  const expected = finalAnswer(parseTaskModel(model));
  const checked = (contender) => ({
    name: contender.name,
    machine: contender.machine,
    async run(listen) {
      const answer = await contender.run(undefined, listen);
      if (answer !== expected) throw new Error(`${contender.name} answered ${JSON.stringify(answer)}, expected ${JSON.stringify(expected)}`);
      return answer;
    },
  });
  return Object.fromEntries(names.map((name) => [name, checked(CONTENDERS[name]({ baseURL, model, stream, fetch }))]));
}

async function warmUp(contenders, runs, names = NAMES) {
  for (let i = 0; i < runs; i++) for (const name of names) await contenders[name].run();
}

/** One K=10, P=1 run at a time: wall and CPU time per run. */
export async function latency({ baseURL, stream, reps, warmup }) {
  const contenders = build({ k: 10, p: 1 }, { baseURL, stream }, WITH_CHART);
  await warmUp(contenders, warmup, WITH_CHART);
  const samples = Object.fromEntries(WITH_CHART.map((name) => [name, { wallMs: [], cpuMs: [] }]));
  for (let rep = 0; rep < reps; rep++) {
    for (const name of interleaved(rep, WITH_CHART)) {
      const { wallMs, cpuMs } = await timed(() => contenders[name].run());
      samples[name].wallMs.push(wallMs);
      samples[name].cpuMs.push(cpuMs);
    }
  }
  // Every repetition's times are kept: the report compares jianmu with the AI SDK repetition by repetition.
  const summary = (name) => ({ wallMs: median(samples[name].wallMs), cpuMs: median(samples[name].cpuMs), samples: reps, wallMsEach: samples[name].wallMs, cpuMsEach: samples[name].cpuMs });
  return { stream, ...Object.fromEntries(WITH_CHART.map((name) => [name, summary(name)])) };
}

/** `runs` K=10, P=1 runs with `concurrency` in flight: completed runs per second. */
export async function throughput({ baseURL, stream, reps, runs, concurrency, warmup }) {
  const contenders = build({ k: 10, p: 1 }, { baseURL, stream }, WITH_CHART);
  for (const name of WITH_CHART) await runPool(warmup, concurrency, () => contenders[name].run());
  const rates = Object.fromEntries(WITH_CHART.map((name) => [name, []]));
  for (let rep = 0; rep < reps; rep++) {
    for (const name of interleaved(rep, WITH_CHART)) {
      const { wallMs } = await timed(() => runPool(runs, concurrency, () => contenders[name].run()));
      rates[name].push(runs / (wallMs / 1000));
    }
  }
  // Every repetition's rate is kept: the report compares jianmu with the AI SDK repetition by repetition.
  return { stream, concurrency, runs, ...Object.fromEntries(WITH_CHART.map((name) => [name, { runsPerSecond: median(rates[name]), samples: reps, rates: rates[name] }])) };
}

/**
 * The first token: a streamed answer whose first delta comes at once, then a pause of `pause` ms
 * before the rest (task.mjs), one run at a time. Per contender and run, how long after the
 * response's first bytes (the role and that delta) reached JavaScript in this process the delta
 * reached the listener a user of that library attaches: the floor's own `for await` over the SDK's
 * stream, jianmu's `onEvent` (`text.delta`), the AI SDK's `textStream`. Every contender's client
 * gets the same `fetch`, which notes the bytes' arrival (memory-fetch.mjs). The floor's figure is
 * the `openai` SDK's own stream yielding the delta: the others' minus the floor's is what each
 * library adds. `inProcess` answers from memory instead of over loopback.
 */
export async function firstToken({ baseURL, reps, warmup, pause, inProcess }) {
  const timing = arrivalTiming(inProcess ? memoryFetch : globalThis.fetch);
  const endpoint = { baseURL: inProcess ? MEMORY_BASE_URL : baseURL, fetch: timing.fetch };
  const contenders = build({ k: 0, p: 1, pause }, { ...endpoint, stream: true });
  const delays = Object.fromEntries(NAMES.map((name) => [name, []]));
  const once = async (name) => {
    let heard;
    await contenders[name].run({ onText: () => (heard ??= performance.now()) });
    const arrived = timing.arrivedAt();
    if (heard === undefined || arrived === undefined) throw new Error(`${name}: the first delta never reached the listener`);
    return heard - arrived;
  };
  for (let i = 0; i < warmup; i++) for (const name of NAMES) await once(name);
  for (let rep = 0; rep < reps; rep++) for (const name of interleaved(rep, NAMES)) delays[name].push(await once(name));
  const summary = (name) => ({ p50Ms: percentile(delays[name], 0.5), p99Ms: percentile(delays[name], 0.99), maxMs: Math.max(...delays[name]), samples: reps });
  return { inProcess: inProcess === true, pause, ...Object.fromEntries(NAMES.map((name) => [name, summary(name)])) };
}

/**
 * K=1, P=8 with every tool sleeping 50 ms: the batch span (first call started to last call
 * ended) against one call's own duration, and the wall time of the whole run. Then a few runs of
 * P=16, more calls than an AbortSignal's listener warning threshold (10), to catch leaks of
 * per-call listeners on a shared signal.
 */
export async function parallelTools({ baseURL, stream, reps, warmup, probeRuns }) {
  const contenders = build({ k: 1, p: 8, tool: "sleep", sleepMs: 50 }, { baseURL, stream });
  await warmUp(contenders, warmup);
  takeSleepCalls();
  const samples = Object.fromEntries(NAMES.map((name) => [name, { wallMs: [], spanMs: [], callMs: [] }]));
  for (let rep = 0; rep < reps; rep++) {
    for (const name of interleaved(rep, NAMES)) {
      const { wallMs } = await timed(() => contenders[name].run());
      const calls = takeSleepCalls();
      if (calls.length !== 8) throw new Error(`${name} ran ${calls.length} sleep calls, expected 8`);
      samples[name].wallMs.push(wallMs);
      samples[name].spanMs.push(Math.max(...calls.map((c) => c.ended)) - Math.min(...calls.map((c) => c.started)));
      samples[name].callMs.push(...calls.map((c) => c.ended - c.started));
    }
  }
  const probe = build({ k: 1, p: 16, tool: "sleep", sleepMs: 5 }, { baseURL, stream });
  for (let i = 0; i < probeRuns; i++) for (const name of NAMES) await probe[name].run();
  takeSleepCalls();
  const summary = (name) => ({
    wallMs: median(samples[name].wallMs),
    spanMs: median(samples[name].spanMs),
    oneToolMs: median(samples[name].callMs),
    samples: reps,
  });
  return { stream, sleepMs: 50, parallel: 8, ...Object.fromEntries(NAMES.map((name) => [name, summary(name)])) };
}

/**
 * A call to the bench server's control endpoints. Tried twice: a pooled connection the server
 * has just closed for idling fails once ("other side closed") and is not retried by fetch.
 */
async function control(url, init) {
  let response;
  try {
    response = await fetch(url, init);
  } catch {
    response = await fetch(url, init);
  }
  if (!response.ok) throw new Error(`bench server: ${url} answered HTTP ${response.status}`);
  return response.json();
}

/** Start `count` runs of a held task, measure once all are parked at the server, release them. */
async function holdAgents(contender, count, baseURL) {
  const runs = Array.from({ length: count }, () => contender.run());
  await control(`${baseURL}/bench/parked?atLeast=${count}`);
  const during = await settledMemory();
  await control(`${baseURL}/bench/release`, { method: "POST" });
  await Promise.all(runs);
  return during;
}

/**
 * The heap settled with no idle pooled connection: the server closes every kept-alive connection
 * with no request in flight, and the client's pool drops them once it sees them closed. How many
 * stay pooled otherwise depends on the server's keep-alive timeout and how long a contender took,
 * not on the library: the heap left after the held runs moved from 5 to 15 KB per run with it.
 */
async function settledWithoutIdleConnections(baseURL) {
  await control(`${baseURL}/bench/close-idle`, { method: "POST" });
  await new Promise((resolve) => setTimeout(resolve, 100));
  return settledMemory();
}

/**
 * One contender per process (RSS never shrinks back, so it cannot be shared): heap and RSS per
 * agent with `agents` runs held mid-run (each parked on its second model call), then the heap
 * left once they have all finished (both over a baseline without idle pooled connections).
 */
export async function memory({ baseURL, stream, contender, agents, warmupRuns }) {
  const task = { k: 2, p: 1 };
  const runner = build(task, { baseURL, stream })[contender];
  const holder = build({ ...task, hold: 1 }, { baseURL, stream })[contender];
  // Warm-up at both shapes: JIT, connection pool, lazily built caches.
  await runPool(warmupRuns, 20, () => runner.run());
  await holdAgents(holder, Math.min(50, agents), baseURL);
  await runPool(warmupRuns, 20, () => runner.run());

  const baseline = await settledWithoutIdleConnections(baseURL);
  const during = await holdAgents(holder, agents, baseURL);
  const after = await settledWithoutIdleConnections(baseURL);
  return {
    stream,
    contender,
    agents,
    heapPerAgent: (during.heap - baseline.heap) / agents,
    rssPerAgent: (during.rss - baseline.rss) / agents,
    heapAfterHeldPerRun: (after.heap - baseline.heap) / agents,
  };
}

/**
 * Heap retained per finished run: the slope of the settled heap over batches of runs. Run in a
 * process with the optimizing tiers off (see run.mjs): otherwise the compiled code and deopt
 * data V8 keeps adding for the first few thousand runs look like a few hundred bytes per run.
 */
export async function retention({ baseURL, stream, contender, batches, batchRuns, batchConcurrency }) {
  const runner = build({ k: 2, p: 1 }, { baseURL, stream })[contender];
  await runPool(batchRuns, batchConcurrency, () => runner.run());
  const done = [];
  const heaps = [];
  for (let batch = 0; batch <= batches; batch++) {
    if (batch > 0) await runPool(batchRuns, batchConcurrency, () => runner.run());
    done.push(batch * batchRuns);
    heaps.push((await settledMemory()).heap);
  }
  return {
    stream,
    contender,
    retainedPerRun: slope(done, heaps),
    runs: batches * batchRuns,
    heapsKB: heaps.map((heap) => Math.round(heap / 1024)),
  };
}

/** A conversation of `size` messages: user turns, tool calls and their observations, answers. */
function history(size) {
  const messages = [];
  for (let turn = 0; messages.length < size; turn++) {
    const pattern = [
      human(`Question ${turn}: what do the records say about item ${turn}? Please check the archive and summarise it.`),
      ai(null, [{ id: `call_h${turn}`, name: "lookup", arguments: JSON.stringify({ query: `item-${turn}` }) }]),
      toolMessage(`call_h${turn}`, `Result for item-${turn}: the record exists, was last updated on 2024-05-01 and has 3 related entries.`, { name: "lookup" }),
      ai(`Item ${turn} exists; it was last updated on 2024-05-01 and has three related entries (a, b and c).`),
    ];
    messages.push(...pattern.slice(0, size - messages.length));
  }
  return messages;
}

/**
 * Saving and restoring a run paused in AwaitingApproval with a `historySize`-message history:
 * `JSON.stringify(persistAgent(actor))`, then `createActor(machine, { snapshot: restoreAgent(...) })`.
 * The floor is a JSON round trip of the bare messages.
 */
export async function persistence({ baseURL, iterations, historySize }) {
  const { machine } = createJianmu({
    baseURL,
    // The server answers round = number of assistant messages so far: K must lie beyond the history.
    model: taskModel({ k: 1000, p: 1 }),
    stream: false,
    machineOptions: { constraints: [requireApproval({ tools: ["lookup"] })] },
  });
  // The model's reply to this history is the 200th message.
  const actor = createActor(machine, { input: { messages: history(historySize - 1) } });
  actor.start();
  await waitFor(actor, (snapshot) => statePath(snapshot.value).endsWith("AwaitingApproval") || snapshot.status !== "active", { timeout: 30_000 });
  if (runStatusOf(actor.getSnapshot()) !== "awaitingApproval") throw new Error(`persistence: the run should be paused for approval, it is ${runStatusOf(actor.getSnapshot())}`);
  const messages = actor.getSnapshot().context.state.messages;
  if (messages.length !== historySize) throw new Error(`persistence: the paused run holds ${messages.length} messages, expected ${historySize}`);

  const ops = {
    floor: {
      persist: () => JSON.stringify(messages),
      restore: (text) => JSON.parse(text),
    },
    jianmu: {
      persist: () => JSON.stringify(persistAgent(actor)),
      restore: (text) => createActor(machine, { snapshot: restoreAgent(machine, text) }),
    },
  };
  const samples = Object.fromEntries(PERSISTED.map((name) => [name, { persistUs: [], restoreUs: [], bytes: 0 }]));
  for (let i = 0; i < iterations + 20; i++) {
    for (const name of interleaved(i, PERSISTED)) {
      const t0 = performance.now();
      const text = ops[name].persist();
      const t1 = performance.now();
      ops[name].restore(text);
      const t2 = performance.now();
      if (i < 20) continue; // warm-up
      samples[name].persistUs.push((t1 - t0) * 1000);
      samples[name].restoreUs.push((t2 - t1) * 1000);
      samples[name].bytes = text.length;
    }
  }
  actor.stop();
  const summary = (name) => {
    const persistUs = median(samples[name].persistUs);
    const restoreUs = median(samples[name].restoreUs);
    return { persistUs, restoreUs, roundTripUs: persistUs + restoreUs, bytes: samples[name].bytes, samples: iterations };
  };
  return { historySize, floor: summary("floor"), jianmu: summary("jianmu") };
}

/** For profiling (bench/profile.mjs): `runs` K=10, P=1 runs of one contender, one after another. */
export async function repeat({ baseURL, stream, contender, runs }) {
  const one = build({ k: 10, p: 1 }, { baseURL, stream }, [contender])[contender];
  const { wallMs, cpuMs } = await timed(async () => {
    for (let i = 0; i < runs; i++) await one.run();
  });
  return { contender, stream, runs, wallMsPerRun: wallMs / runs, cpuMsPerRun: cpuMs / runs };
}

export const SCENARIOS = { latency, throughput, firstToken, parallelTools, memory, retention, persistence, repeat };
