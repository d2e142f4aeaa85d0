import OpenAI from "openai";
import { fromPromise } from "xstate";
import { ModelClient, ToolSet, createReactMachine, defaultContextBuilder, human, runAgent } from "jianmu";
import { createChartMachine, runChart } from "./chart.mjs";
import { DESIGNS, designChart } from "./design-charts.mjs";
import { firstMessages } from "./contenders.mjs";
import { interleaved, median, timed } from "./measure.mjs";
import { scriptedReply } from "./replies.mjs";
import { BENCH_PROMPT, finalAnswer, parseTaskModel, taskModel } from "./task.mjs";
import { jianmuTools, toolBodies } from "./tools.mjs";

/*
 * Loop overhead without a network: `node bench/inproc.mjs [reps] [--stream] [--only a,b]`.
 * Every contender's `openai` client gets a `fetch` that answers from memory with the bench server's
 * scripted replies, so what differs between them is only the loop around the SDK. Prints µs per model
 * call over the floor, and the ratio; a steadier yardstick than the loopback bench for the loop's own
 * cost (it leaves out the HTTP stack, which the main bench keeps).
 */

const argv = process.argv.slice(2);
const reps = Number(argv.find((a) => /^\d+$/.test(a)) ?? 400);
const stream = argv.includes("--stream");
const only = argv.includes("--only") ? argv[argv.indexOf("--only") + 1].split(",") : undefined;
const task = { k: 10, p: 1 };
const model = taskModel(task);
const expected = finalAnswer(parseTaskModel(model));
const toolset = ToolSet.empty().withTools(jianmuTools);
const TOOLS = toolset.schemas();
const SYSTEM = defaultContextBuilder({ agent: "floor", iteration: 0, messages: [], state: {}, tools: toolset.info() })[0].content;

const encoder = new TextEncoder();
async function memoryFetch(url, init) {
  const body = JSON.parse(init.body);
  const round = body.messages.filter((m) => m.role === "assistant").length;
  const reply = scriptedReply(parseTaskModel(body.model), body.model, round, body.stream === true);
  if (reply.kind === "json") return new Response(JSON.stringify(reply.body), { status: 200, headers: { "content-type": "application/json" } });
  const text = reply.body;
  return new Response(encoder.encode(typeof text === "string" ? text : text.join("")), { status: 200, headers: { "content-type": "text/event-stream" } });
}
const client = () => new OpenAI({ baseURL: "http://memory.invalid/v1", apiKey: "bench-key", maxRetries: 2, fetch: memoryFetch });

function complete() {
  const sdk = client();
  return async (messages) => {
    const request = { model, messages: [{ role: "system", content: SYSTEM }, ...messages.slice(1)], tools: TOOLS, stream };
    if (!stream) {
      const message = (await sdk.chat.completions.create(request)).choices[0].message;
      return { content: message.content ?? "", toolCalls: message.tool_calls ?? [] };
    }
    let content = "";
    const toolCalls = [];
    for await (const chunk of await sdk.chat.completions.create({ ...request, stream_options: { include_usage: true } })) {
      const delta = chunk.choices[0]?.delta;
      if (!delta) continue;
      if (delta.content) content += delta.content;
      for (const part of delta.tool_calls ?? []) {
        const call = (toolCalls[part.index] ??= { id: "", type: "function", function: { name: "", arguments: "" } });
        if (part.id) call.id = part.id;
        if (part.function?.name) call.function.name = part.function.name;
        if (part.function?.arguments) call.function.arguments += part.function.arguments;
      }
    }
    return { content, toolCalls };
  };
}

const floorComplete = complete();
const floor = async () => {
  const messages = firstMessages(BENCH_PROMPT);
  for (;;) {
    const { content, toolCalls } = await floorComplete(messages);
    if (toolCalls.length === 0) return content;
    messages.push({ role: "assistant", content: content === "" ? null : content, tool_calls: toolCalls });
    for (const call of toolCalls) messages.push({ role: "tool", tool_call_id: call.id, content: String(await toolBodies[call.function.name](JSON.parse(call.function.arguments))) });
  }
};
const chartMachine = createChartMachine({ complete: complete(), toolBodies, toolInfo: toolset.info() });
const chart = async () => (await runChart(chartMachine, firstMessages(BENCH_PROMPT))).finalAnswer;
const jianmuMachine = createReactMachine({
  modelClient: ModelClient.resolve({ client: client(), model, stream, resilience: { maxRetries: 2 } }),
  tools: jianmuTools,
  config: { maxIterations: 50 },
  configFile: false,
});
const jianmu = async () => (await runAgent(jianmuMachine, { messages: [human(BENCH_PROMPT)] })).finalAnswer;

const rawModelClient = (() => {
  const sdk = client();
  return {
    description: "raw",
    async complete(request) {
      const message = (await sdk.chat.completions.create({ model, messages: request.messages.map((m) => m.role === "assistant" ? { role: "assistant", content: m.content || null, ...(m.toolCalls?.length ? { tool_calls: m.toolCalls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: c.arguments } })) } : {}) } : m.role === "tool" ? { role: "tool", tool_call_id: m.toolCallId, content: m.content } : { role: m.role, content: m.content }), tools: TOOLS })).choices[0].message;
      return { content: message.content ?? "", toolCalls: (message.tool_calls ?? []).map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments })), usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2 }, finishReason: "stop", model };
    },
  };
})();
const ladderMachine = (which) => {
  let m = createReactMachine({ modelClient: which === "rawModel" || which === "rawBoth" ? rawModelClient : ModelClient.resolve({ client: client(), model, stream, resilience: { maxRetries: 2 } }), tools: jianmuTools, config: { maxIterations: 50 }, configFile: false });
  if (which === "rawExec" || which === "rawBoth") m = m.provide({ actors: { toolExecutor: fromPromise(async ({ input }) => ({ outcomes: await Promise.all(input.calls.map(async (call) => ({ callId: call.id, name: call.name, status: "ok", content: String(await toolBodies[call.name](JSON.parse(call.arguments))), effectTags: [] }))) })) } });
  return async () => (await runAgent(m, { messages: [human(BENCH_PROMPT)] })).finalAnswer;
};
const ladder = argv.includes("--ladder") ? { rawModel: ladderMachine("rawModel"), rawExec: ladderMachine("rawExec"), rawBoth: ladderMachine("rawBoth") } : {};
const designs = Object.fromEntries(
  argv.includes("--designs") ? DESIGNS.map((design) => {
    const machine = designChart(design, complete());
    return [design, async () => (await runChart(machine, firstMessages(BENCH_PROMPT))).finalAnswer];
  }) : [],
);
const runs = Object.fromEntries(Object.entries({ floor, chart, jianmu, ...ladder, ...designs }).filter(([name]) => name === "floor" || !only || only.includes(name)));
const names = Object.keys(runs);
for (const name of names) {
  const answer = await runs[name]();
  if (answer !== expected) throw new Error(`${name} answered ${JSON.stringify(answer)}`);
}
for (let i = 0; i < 200; i++) for (const name of names) await runs[name]();
const wall = Object.fromEntries(names.map((n) => [n, []]));
const cpu = Object.fromEntries(names.map((n) => [n, []]));
for (let rep = 0; rep < reps; rep++) {
  for (const name of interleaved(rep, names)) {
    const sample = await timed(runs[name]);
    wall[name].push(sample.wallMs);
    cpu[name].push(sample.cpuMs);
  }
}
const calls = task.k + 1;
const base = { wall: median(wall.floor), cpu: median(cpu.floor) };
console.log(`in process, no network, K=10 P=1 ${stream ? "streaming" : "non-streaming"}, ${reps} interleaved runs; floor ${((base.wall * 1000) / calls).toFixed(0)} µs per call`);
for (const name of names) {
  const w = median(wall[name]);
  const c = median(cpu[name]);
  console.log(`${name.padEnd(8)} wall +${(((w - base.wall) * 1000) / calls).toFixed(0).padStart(4)} µs/call (${(w / base.wall).toFixed(2)}×)  cpu +${(((c - base.cpu) * 1000) / calls).toFixed(0).padStart(4)} µs/call`);
}
