#!/usr/bin/env node
/*
 * What OpenTelemetry tracing costs a run: the same agent on the same tasks, `runAgent` without and
 * with `{ tracer }`, taking turns repetition by repetition, in one process. Reports the medians per
 * run and their ratio (traced / untraced); no absolute target, the ratio is what to watch.
 *
 * The model is the loopback OpenAI-compatible server answering at once (K rounds of P tool calls,
 * then the answer), so the run is as short as a real one can be and tracing's share is as large as
 * it gets. Spans go through a SimpleSpanProcessor to an in-memory exporter, emptied every repetition.
 *
 *   npm run build && node bench/tracing.mjs [--reps 12] [--runs 40] [--rounds 3] [--parallel 2] [--smoke] [--json out.json]
 */
import { writeFileSync } from "node:fs";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { createReactMachine, defineTool, human, ModelClient, runAgent } from "jianmu";
import { startOpenAIServer } from "jianmu/testing";
import { z } from "zod";
import { cliOption, interleaved, median, timed } from "./measure.mjs";
import { scriptedReply } from "./replies.mjs";
import { BENCH_PROMPT, finalAnswer, lookupResult, taskModel } from "./task.mjs";

const smoke = process.argv.includes("--smoke");
const reps = Number(cliOption("reps", smoke ? 2 : 12));
const runs = Number(cliOption("runs", smoke ? 2 : 40));
const rounds = Number(cliOption("rounds", 3));
const parallel = Number(cliOption("parallel", 2));

// The bench's own task and replies (task.mjs, replies.mjs): streamed, as real endpoints answer.
const task = { k: rounds, p: parallel, tool: "lookup", sleepMs: 0, hold: undefined };
const model = taskModel(task);

/** The round to answer is the number of assistant turns already in the request's history. */
function respond(request) {
  const round = (request.body?.messages ?? []).filter((message) => message.role === "assistant").length;
  return scriptedReply(task, model, round, request.body?.stream === true);
}

const lookup = defineTool({
  name: "lookup",
  description: "Look a query up.",
  parameters: z.object({ query: z.string() }),
  parallelSafe: true,
  execute: ({ query }) => lookupResult(query),
});

const server = await startOpenAIServer({ respond });
const modelClient = ModelClient.resolve({ baseURL: server.baseURL, apiKey: "bench", model });
const machine = createReactMachine({ modelClient, tools: [lookup], configFile: false });
const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const tracer = provider.getTracer("jianmu-bench");
const expectedSpans = 1 + (rounds + 1) + rounds * parallel;

const contenders = {
  off: () => runAgent(machine, { messages: [human(BENCH_PROMPT)] }),
  on: () => runAgent(machine, { messages: [human(BENCH_PROMPT)] }, { tracer }),
};

const figures = { off: { wallMs: [], cpuMs: [] }, on: { wallMs: [], cpuMs: [] } };
for (let i = 0; i < 3; i++) for (const run of Object.values(contenders)) await run(); // warm up
for (let rep = 0; rep < reps; rep++) {
  for (const name of interleaved(rep, ["off", "on"])) {
    exporter.reset();
    const { wallMs, cpuMs } = await timed(async () => {
      for (let i = 0; i < runs; i++) {
        const output = await contenders[name]();
        if (output.finalAnswer !== finalAnswer(task)) throw new Error(`a ${name} run failed: ${output.termination?.reason ?? output.finalAnswer}`);
      }
    });
    if (name === "on" && exporter.getFinishedSpans().length !== runs * expectedSpans) {
      throw new Error(`expected ${runs * expectedSpans} spans, got ${exporter.getFinishedSpans().length}`);
    }
    figures[name].wallMs.push(wallMs / runs);
    figures[name].cpuMs.push(cpuMs / runs);
  }
}
await provider.shutdown();
await server.close();

const result = {
  date: new Date().toISOString(),
  node: process.version,
  reps,
  runsPerRep: runs,
  task: { rounds, parallel, spansPerTracedRun: expectedSpans },
  medianMsPerRun: {
    off: { wall: median(figures.off.wallMs), cpu: median(figures.off.cpuMs) },
    on: { wall: median(figures.on.wallMs), cpu: median(figures.on.cpuMs) },
  },
};
result.ratio = { wall: result.medianMsPerRun.on.wall / result.medianMsPerRun.off.wall, cpu: result.medianMsPerRun.on.cpu / result.medianMsPerRun.off.cpu };

const fmt = (n) => n.toFixed(3);
console.log(`tracing overhead: ${rounds} rounds x ${parallel} tool calls per run, ${runs} runs x ${reps} repetitions, loopback server`);
console.log("| measure | off (ms/run) | on (ms/run) | on / off |");
console.log("| --- | --- | --- | --- |");
console.log(`| wall | ${fmt(result.medianMsPerRun.off.wall)} | ${fmt(result.medianMsPerRun.on.wall)} | ${result.ratio.wall.toFixed(2)}x |`);
console.log(`| cpu | ${fmt(result.medianMsPerRun.off.cpu)} | ${fmt(result.medianMsPerRun.on.cpu)} | ${result.ratio.cpu.toFixed(2)}x |`);
const out = cliOption("json", undefined);
if (out) writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`);
