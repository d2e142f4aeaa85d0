#!/usr/bin/env node
/*
 * What the Responses path costs per model call, against the raw SDK's `responses.create` loop, next
 * to what the Chat Completions path costs against the raw SDK's `chat.completions.create` loop, in
 * one run. Issue 31's target: the Responses ratio (jianmu / floor) within 5% of the Chat
 * Completions one, i.e. speaking the Responses API adds no more over its floor than Chat
 * Completions does over its own.
 *
 * The method is the main bench's (bench/README.md): the scripted server in a process of its own
 * (server.mjs, now also answering `POST /v1/responses`), so its work never counts against a
 * contender; the four contenders in one client process, taking turns repetition by repetition
 * (`interleaved`), each run checked for the task's final answer; medians over the repetitions.
 * A run is K rounds of P `lookup` calls, then the answer: K + 1 model calls, so "per call" is the
 * run's time divided by K + 1.
 *
 * `--memory` leaves the network out, as bench/inproc.mjs does: every contender's SDK client gets a
 * `fetch` answering from memory with the server's very replies, so the SDK still builds, sends and
 * parses every request and only the loops around it differ; steadier on a loaded machine.
 *
 *   npm run build && node bench/responses.mjs [--reps 12] [--runs 30] [--rounds 10] [--parallel 1] [--whole] [--memory] [--smoke] [--json out.json]
 */
import { writeFileSync } from "node:fs";
import { createFloor, createJianmu, createResponsesFloor } from "./contenders.mjs";
import { cliOption, interleaved, median, timed } from "./measure.mjs";
import { MEMORY_BASE_URL } from "./memory-fetch.mjs";
import { startServer } from "./processes.mjs";
import { scriptedReply, scriptedResponsesReply } from "./replies.mjs";
import { finalAnswer, roundOf, taskModel } from "./task.mjs";

const smoke = process.argv.includes("--smoke");
const reps = Number(cliOption("reps", smoke ? 2 : 12));
const runs = Number(cliOption("runs", smoke ? 2 : 30));
const task = { k: Number(cliOption("rounds", 10)), p: Number(cliOption("parallel", 1)), tool: "lookup", sleepMs: 0, hold: undefined };
const stream = !process.argv.includes("--whole");
const TARGET = 1.05;

const memory = process.argv.includes("--memory");
const model = taskModel(task);

/** The bench server's answer to a request, without the server (`--memory`). */
async function memoryFetch(url, init) {
  const body = JSON.parse(init.body);
  const responses = String(url).endsWith("/responses");
  const reply = (responses ? scriptedResponsesReply : scriptedReply)(task, body.model, roundOf(String(url), body, task), body.stream === true);
  const [text, type] = reply.kind === "json" ? [JSON.stringify(reply.body), "application/json"] : [reply.body, "text/event-stream"];
  return new Response(text, { status: 200, headers: { "content-type": type } });
}

const serverLog = [];
const server = memory ? undefined : startServer(serverLog);
await server?.ready;
const baseURL = server ? await server.restart() : MEMORY_BASE_URL;
const fetch = memory ? memoryFetch : undefined;
const expected = finalAnswer(task);
const checked = (name, contender) => ({
  name,
  async run() {
    const answer = await contender.run();
    if (answer !== expected) throw new Error(`${name} answered ${JSON.stringify(answer)}, expected ${JSON.stringify(expected)}`);
  },
});
const contenders = {
  "chat floor": checked("chat floor", createFloor({ baseURL, model, stream, fetch })),
  "chat jianmu": checked("chat jianmu", createJianmu({ baseURL, model, stream, fetch })),
  "responses floor": checked("responses floor", createResponsesFloor({ baseURL, model, stream, fetch })),
  "responses jianmu": checked("responses jianmu", createJianmu({ baseURL, model, stream, fetch, api: "responses" })),
};
const names = Object.keys(contenders);
const figures = Object.fromEntries(names.map((name) => [name, { wallMs: [], cpuMs: [] }]));

try {
  for (let i = 0; i < 3; i++) for (const contender of Object.values(contenders)) await contender.run(); // warm up
  for (let rep = 0; rep < reps; rep++) {
    for (const name of interleaved(rep, names)) {
      const { wallMs, cpuMs } = await timed(async () => {
        for (let i = 0; i < runs; i++) await contenders[name].run();
      });
      figures[name].wallMs.push(wallMs / runs);
      figures[name].cpuMs.push(cpuMs / runs);
    }
  }
} finally {
  await server?.stop();
}

const calls = task.k + 1;
const perCall = (name, measure) => median(figures[name][measure]) / calls;
const ratio = (api, measure) => perCall(`${api} jianmu`, measure) / perCall(`${api} floor`, measure);
const result = {
  date: new Date().toISOString(),
  node: process.version,
  reps,
  runsPerRep: runs,
  task: { rounds: task.k, parallel: task.p, modelCallsPerRun: calls, stream, network: memory ? "none (in-memory fetch)" : "loopback server process" },
  medianMsPerCall: Object.fromEntries(names.map((name) => [name, { wall: perCall(name, "wallMs"), cpu: perCall(name, "cpuMs") }])),
  ratio: {
    chat: { wall: ratio("chat", "wallMs"), cpu: ratio("chat", "cpuMs") },
    responses: { wall: ratio("responses", "wallMs"), cpu: ratio("responses", "cpuMs") },
  },
};
result.responsesOverChat = { wall: result.ratio.responses.wall / result.ratio.chat.wall, cpu: result.ratio.responses.cpu / result.ratio.chat.cpu };
result.target = { responsesOverChat: TARGET };

const ms = (n) => n.toFixed(3);
const x = (n) => `${n.toFixed(3)}×`;
const verdict = (n) => (n <= TARGET ? "PASS" : "FAIL");
console.log(`Responses vs Chat Completions: ${task.k} rounds × ${task.p} call(s) + the answer (${calls} model calls a run), ${stream ? "streamed" : "whole responses"}, ${memory ? "no network (in-memory fetch)" : "loopback server process"}, ${runs} runs × ${reps} repetitions`);
console.log("| API | floor wall ms/call | jianmu wall ms/call | wall jianmu / floor | floor CPU ms/call | jianmu CPU ms/call | CPU jianmu / floor |");
console.log("| --- | --- | --- | --- | --- | --- | --- |");
for (const api of ["chat", "responses"]) {
  const floor = result.medianMsPerCall[`${api} floor`];
  const jianmu = result.medianMsPerCall[`${api} jianmu`];
  console.log(`| ${api} | ${ms(floor.wall)} | ${ms(jianmu.wall)} | ${x(result.ratio[api].wall)} | ${ms(floor.cpu)} | ${ms(jianmu.cpu)} | ${x(result.ratio[api].cpu)} |`);
}
console.log(`Responses ratio / Chat Completions ratio: wall ${x(result.responsesOverChat.wall)} (${verdict(result.responsesOverChat.wall)}), CPU ${x(result.responsesOverChat.cpu)} (${verdict(result.responsesOverChat.cpu)}); target ≤ ${TARGET}×`);
if (serverLog.length > 0) console.log(`server stderr: ${serverLog.join(" | ")}`);
const out = cliOption("json", undefined);
if (out) writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`);
