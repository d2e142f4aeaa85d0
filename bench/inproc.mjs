import { createActor, fromPromise, toPromise } from "xstate";
import { CONTENDERS, createJianmu, firstMessages, sdkCompletion } from "./contenders.mjs";
import { DESIGNS, designChart } from "./design-charts.mjs";
import { interleaved, median, timed } from "./measure.mjs";
import { memoryEndpoint } from "./memory-fetch.mjs";
import { firstToken } from "./scenarios.mjs";
import { BENCH_PROMPT, finalAnswer, parseTaskModel, taskModel } from "./task.mjs";
import { toolBodies } from "./tools.mjs";

/*
 * The loop's own cost without a network:
 *
 *   node bench/inproc.mjs [reps] [--stream] [--k N] [--ladder] [--designs] [--only a,b] [--smoke]
 *
 * Every contender's `openai` client gets a `fetch` that answers from memory with the bench server's
 * scripted replies (the same bytes the loopback server sends), so the SDK still builds, sends and
 * parses every request, and what differs between contenders is only the loop around it. The floor,
 * the bare XState chart, jianmu and the Vercel AI SDK take turns run by run in one process; it prints
 * the median wall and CPU time each adds per model call over the floor, then the first token (see
 * `firstToken` in scenarios.mjs) of the floor, jianmu and the AI SDK, answered from memory. Without the HTTP stack the figures are steadier
 * than the loopback bench's (and smaller: over loopback the same work costs about twice as much, the
 * HTTP stack running slower between the interpreter's steps), so this is the yardstick for changes
 * to the loop itself; run.mjs stays the one for the targets.
 *
 *   --ladder   adds jianmu with one layer swapped for a bare one, to split jianmu's own share:
 *              bareModel (a ModelClient calling the SDK directly: no retries, no attempt
 *              timer, no response validation), bareExecutor (`toolExecutor` provided as a
 *              fromPromise that runs the tool bodies), bareBoth (the two)
 *   --designs  adds the chart designs of design-charts.mjs (see designs.mjs)
 *   --k N      rounds of tool calls before the answer (default 10; --k 0 is one model call a run,
 *              which shows what a run costs besides its rounds)
 */

const argv = process.argv.slice(2);
const smoke = argv.includes("--smoke");
const reps = smoke ? 4 : Number(argv.find((a) => /^\d+$/.test(a)) ?? 400);
const warmup = smoke ? 2 : 200;
const stream = argv.includes("--stream");
const option = (name) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : undefined);
const only = option("--only")?.split(",");
const task = { k: Number(option("--k") ?? 10), p: 1 };
const model = taskModel(task);
const expected = finalAnswer(parseTaskModel(model));

const endpoint = memoryEndpoint(model, stream);

/** A ModelClient with none of jianmu's model layer: the floor's SDK call, its reply in jianmu's shape. */
function bareModelClient() {
  const complete = sdkCompletion(endpoint);
  const wire = (m) =>
    m.role === "assistant"
      ? { role: "assistant", content: m.content, ...(m.toolCalls?.length ? { tool_calls: m.toolCalls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: c.arguments } })) } : {}) }
      : m.role === "tool"
        ? { role: "tool", tool_call_id: m.toolCallId, content: m.content }
        : m;
  return {
    description: "bare",
    async complete(request) {
      const { content, toolCalls } = await complete(request.messages.map(wire));
      return {
        content,
        toolCalls: toolCalls.map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments })),
        usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 },
        finishReason: toolCalls.length > 0 ? "tool_calls" : "stop",
        model,
      };
    },
  };
}

/** A tool executor with none of jianmu's: run the bodies, answer in jianmu's outcome shape. */
const bareExecutor = fromPromise(async ({ input }) => ({
  outcomes: await Promise.all(
    input.calls.map(async (call) => ({ callId: call.id, name: call.name, status: "ok", content: String(await toolBodies[call.name](JSON.parse(call.arguments))), effectTags: [] })),
  ),
}));

const contenders = Object.fromEntries(Object.entries(CONTENDERS).map(([name, create]) => [name, create(endpoint)]));
if (argv.includes("--ladder")) {
  contenders.bareModel = createJianmu({ ...endpoint, name: "bareModel", machineOptions: { modelClient: bareModelClient() } });
  contenders.bareExecutor = createJianmu({ ...endpoint, name: "bareExecutor", actors: { toolExecutor: bareExecutor } });
  contenders.bareBoth = createJianmu({ ...endpoint, name: "bareBoth", machineOptions: { modelClient: bareModelClient() }, actors: { toolExecutor: bareExecutor } });
}
if (argv.includes("--designs")) {
  for (const design of DESIGNS) {
    const machine = designChart(design, sdkCompletion(endpoint));
    contenders[design] = {
      async run() {
        const actor = createActor(machine, { input: { messages: firstMessages(BENCH_PROMPT) } });
        actor.start();
        return (await toPromise(actor)).finalAnswer;
      },
    };
  }
}
const names = Object.keys(contenders).filter((name) => name === "floor" || !only || only.includes(name));

for (const name of names) {
  const answer = await contenders[name].run();
  if (answer !== expected) throw new Error(`${name} answered ${JSON.stringify(answer)}, expected ${JSON.stringify(expected)}`);
}
for (let i = 0; i < warmup; i++) for (const name of names) await contenders[name].run();
const wall = Object.fromEntries(names.map((n) => [n, []]));
const cpu = Object.fromEntries(names.map((n) => [n, []]));
for (let rep = 0; rep < reps; rep++) {
  for (const name of interleaved(rep, names)) {
    const sample = await timed(() => contenders[name].run());
    wall[name].push(sample.wallMs);
    cpu[name].push(sample.cpuMs);
  }
}

const calls = task.k + 1;
const floor = { wall: median(wall.floor), cpu: median(cpu.floor) };
const perCall = (ms) => `${((ms * 1000) / calls).toFixed(0).padStart(5)} µs`;
console.log(`In process, no network: K=${task.k} P=1, ${stream ? "streaming" : "non-streaming"}, ${reps} interleaved runs each (medians).`);
console.log(`The floor takes ${perCall(floor.wall).trim()} of wall time per model call; what each contender adds to it:`);
console.log("| contender | added wall per model call | added CPU per model call | wall / floor |");
console.log("|---|---:|---:|---:|");
for (const name of names.filter((n) => n !== "floor")) {
  const w = median(wall[name]);
  const c = median(cpu[name]);
  console.log(`| ${name} | ${perCall(w - floor.wall)} | ${perCall(c - floor.cpu)} | ${(w / floor.wall).toFixed(2)}× |`);
}

const first = await firstToken({ reps: smoke ? 3 : reps, warmup: smoke ? 1 : 20, pause: smoke ? 5 : 20, inProcess: true });
console.log(`\nFirst token, answered from memory: a streamed answer's first delta, then a ${first.pause} ms pause; from its bytes' arrival to the listener, ${first.floor.samples} interleaved runs each.`);
console.log("| contender | p50 | p99 | p50 − floor | p99 − floor |");
console.log("|---|---:|---:|---:|---:|");
const msText = (v) => `${v.toFixed(2)} ms`;
for (const name of ["floor", "jianmu", "aisdk"]) {
  const f = first[name];
  console.log(`| ${name} | ${msText(f.p50Ms)} | ${msText(f.p99Ms)} | ${msText(f.p50Ms - first.floor.p50Ms)} | ${msText(f.p99Ms - first.floor.p99Ms)} |`);
}
