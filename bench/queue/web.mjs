// `npm run bench:web`: jianmu/http on the run queue, measured (never asserted).
//   node bench/queue/web.mjs [--runs 200] [--clients 8] [--latency-runs 20] [--words 20] [--pause-ms 30] [--smoke] [--out DIR]
// - runs/s through the handler (POST /runs read to run.finished, `--clients` at a time, an instant loopback model):
//   the in-memory handler in this process (store: false, the baseline), one process on SQLite with the embedded
//   worker, and two HTTP-only replica processes plus one worker process on PostgreSQL (starts alternate between them);
// - SSE delta latency across replicas on PostgreSQL: a run started on replica A and followed on replica B; each text
//   delta from the worker process's emit (wall clock, same machine) to its arrival in this process from B (p50, p99).
// Processes: test/postgres/web-child.mjs on dist/. Needs dist/ (npm run build). Uses DATABASE_URL, or starts a cluster.
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { createServer } from "node:http";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import pg from "pg";
import { startCluster } from "./cluster.mjs";

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, "../..");
const DIST = join(ROOT, "dist");
const CHILD = join(ROOT, "test/postgres/web-child.mjs");
const args = { runs: 200, clients: 8, latencyRuns: 20, words: 20, pauseMs: 30, out: join(HERE, "..", "results"), smoke: false };
for (let i = 2; i < process.argv.length; i++) {
  const flag = process.argv[i];
  const next = () => process.argv[++i];
  if (flag === "--runs") args.runs = Number(next());
  else if (flag === "--clients") args.clients = Number(next());
  else if (flag === "--latency-runs") args.latencyRuns = Number(next());
  else if (flag === "--words") args.words = Number(next());
  else if (flag === "--pause-ms") args.pauseMs = Number(next());
  // Tiny sizes, to check the harness: its numbers mean nothing.
  else if (flag === "--smoke") Object.assign(args, { runs: 6, clients: 2, latencyRuns: 2, words: 4, smoke: true });
  else if (flag === "--out") args.out = resolve(next());
  else throw new Error(`unknown argument ${flag}; see the comment at the top of bench/queue/web.mjs`);
}

const load = (file) => import(pathToFileURL(join(DIST, file)).href);
const { createReactMachine, ModelClient } = await load("index.js");
const { SqliteRunStore } = await load("sqlite.js");
const { PostgresRunStore } = await load("postgres.js");
const { agentHandler, toNodeListener } = await load("http.js");
const { startOpenAIServer, textTurn } = await load("testing.js");
const now = () => performance.timeOrigin + performance.now();
const percentile = (values, p) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((p / 100) * values.length))];

// The model: "fast" answers at once in five words; "lat <k>" says `--words` words `--pause-ms` apart, each named k<k>w<i>.
const model = await startOpenAIServer({
  respond: (request) => {
    const task = String(request.body.messages.find((m) => m.role === "user")?.content ?? "");
    const latency = /^lat (\d+)/.exec(task);
    if (!latency) return textTurn("done in five short words");
    const words = Array.from({ length: args.words }, (_, i) => `k${latency[1]}w${i}`).join(" ");
    return textTurn(words, undefined, { delayMs: args.pauseMs });
  },
});
const agentsFor = () => ({ payer: createReactMachine({ name: "payer", modelClient: ModelClient.resolve({ baseURL: model.baseURL, apiKey: "k", model: "m", resilience: { maxRetries: 0 } }), configFile: false }) });

async function serve(handler) {
  const server = createServer(toNodeListener(handler));
  await new Promise((done) => server.listen(0, "127.0.0.1", done));
  return { base: `http://127.0.0.1:${server.address().port}/api`, close: () => (server.closeAllConnections(), new Promise((done) => server.close(done))) };
}

/** Read an SSE response to its end; returns [{ type, data, at }]. */
async function readEvents(response, onEvent = () => undefined) {
  const decoder = new TextDecoder();
  let buffer = "";
  const events = [];
  for await (const chunk of response.body) {
    buffer += decoder.decode(chunk, { stream: true });
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const type = /^event: (.*)$/m.exec(block)?.[1];
      const data = /^data: (.*)$/m.exec(block)?.[1];
      if (!type) continue;
      const event = { type, data: JSON.parse(data), at: now() };
      events.push(event);
      onEvent(event);
    }
  }
  return events;
}

const start = (base, task) => fetch(`${base}/runs`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ agent: "payer", message: task }) });

/** `args.runs` runs, `args.clients` at a time, each read to its end; bases are used in turn. */
async function throughput(bases) {
  let next = 0;
  let finished = 0;
  const began = now();
  await Promise.all(
    Array.from({ length: args.clients }, async () => {
      while (next < args.runs) {
        const index = next++;
        const events = await readEvents(await start(bases[index % bases.length], "fast"));
        if (events.at(-1)?.type === "run.finished") finished++;
        else throw new Error(`run ${index} ended with ${events.at(-1)?.type}`);
      }
    }),
  );
  return { runsPerSecond: finished / ((now() - began) / 1000), finished };
}

function child(options) {
  const proc = spawn(process.execPath, [CHILD, JSON.stringify({ dist: DIST, baseURL: model.baseURL, schema: "bench_web", ...options })], { stdio: ["ignore", "pipe", "inherit"] });
  const lines = [];
  let buffer = "";
  let wake;
  proc.stdout.setEncoding("utf8").on("data", (chunk) => {
    buffer += chunk;
    let n;
    while ((n = buffer.indexOf("\n")) >= 0) {
      lines.push(JSON.parse(buffer.slice(0, n)));
      buffer = buffer.slice(n + 1);
    }
    wake?.();
  });
  const ready = new Promise((done) => {
    wake = () => {
      const first = lines.find((line) => line.ready);
      if (first) done(first.port === undefined ? undefined : `http://127.0.0.1:${first.port}/api`);
    };
  });
  return { proc, lines, ready };
}

const rows = [];
// 1. The baseline: the in-memory handler in this process.
{
  const handler = agentHandler({ agents: agentsFor(), store: false, basePath: "/api" });
  const server = await serve(handler);
  rows.push({ contender: "in-memory handler, this process (store: false)", ...(await throughput([server.base])) });
  await server.close();
  await handler.close();
}
// 2. One process on SQLite with the embedded worker.
{
  const dir = mkdtempSync(join(tmpdir(), "jianmu-bench-web-"));
  const store = new SqliteRunStore({ path: join(dir, "queue.db") });
  const handler = agentHandler({ agents: agentsFor(), store, basePath: "/api" });
  const server = await serve(handler);
  rows.push({ contender: "one process, SqliteRunStore, embedded worker (concurrency 4)", ...(await throughput([server.base])) });
  await server.close();
  await handler.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
// 3. PostgreSQL: two HTTP-only replicas and one worker process.
const cluster = process.env.DATABASE_URL ? undefined : await startCluster();
const url = process.env.DATABASE_URL ?? cluster.url;
const admin = new pg.Client({ connectionString: url });
await admin.connect();
await admin.query("DROP SCHEMA IF EXISTS bench_web CASCADE");
await admin.query("CREATE TABLE IF NOT EXISTS effects (note text PRIMARY KEY, count integer NOT NULL)");
// Migrated here once, so the processes find the tables.
await (await PostgresRunStore.connect({ connectionString: url, schema: "bench_web" })).close();
const [a, b, worker] = [child({ role: "replica", id: "a", url }), child({ role: "replica", id: "b", url }), child({ role: "worker", id: "w", url, timing: true, concurrency: 8 })];
const [baseA, baseB] = await Promise.all([a.ready, b.ready, worker.ready]);
rows.push({ contender: "PostgresRunStore, 2 HTTP-only replicas + 1 worker process (concurrency 8), starts alternating", ...(await throughput([baseA, baseB])) });

// Latency: started on A (whose stream this page drops at once), followed on B from the first event.
const latencies = [];
for (let k = 0; k < args.latencyRuns; k++) {
  const response = await start(baseA, `lat ${k}`);
  const runId = response.headers.get("x-run-id");
  await response.body.cancel();
  const opened = now();
  const arrived = new Map();
  await readEvents(await fetch(`${baseB}/runs/${runId}/stream`), (event) => {
    if (event.type === "text.delta") for (const token of event.data.delta.match(new RegExp(`k${k}w\\d+`, "g")) ?? []) arrived.set(token, event.at);
  });
  for (const line of worker.lines) {
    for (const token of line.delta?.match(new RegExp(`k${k}w\\d+`, "g")) ?? []) {
      // Deltas emitted before B's stream was open measure the attach, not the path.
      if (line.at >= opened && arrived.has(token)) latencies.push(arrived.get(token) - line.at);
    }
  }
}
for (const p of [a, b, worker]) p.proc.kill("SIGKILL");
await admin.query("DROP SCHEMA IF EXISTS bench_web CASCADE");
await admin.end();
cluster?.stop();
await model.close();

const baseline = rows[0].runsPerSecond;
const latency = { deltas: latencies.length, p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99), maxMs: Math.max(...latencies) };
const stamp = new Date().toISOString();
const md = [
  `# jianmu/http on the run queue (${stamp}, Node ${process.version}, ${cpus().length} cores${args.smoke ? ", SMOKE: the numbers mean nothing" : ""})`,
  "",
  `${args.runs} runs per row, ${args.clients} clients at a time; each run is one streamed model turn of five words from an instant loopback model, read by the client to \`run.finished\`.`,
  "",
  "| contender | runs/s | vs in-memory handler |",
  "| --- | ---: | ---: |",
  ...rows.map((row) => `| ${row.contender} | ${row.runsPerSecond.toFixed(1)} | ${(row.runsPerSecond / baseline).toFixed(2)}x |`),
  "",
  `SSE text-delta latency across replicas (PostgreSQL, LISTEN/NOTIFY): started on replica A, followed on replica B; from the worker process emitting the delta to this process reading it from B. ${args.latencyRuns} runs of ${args.words} words ${args.pauseMs} ms apart, ${latency.deltas} deltas.`,
  "",
  "| p50 ms | p99 ms | max ms |",
  "| ---: | ---: | ---: |",
  `| ${latency.p50Ms.toFixed(1)} | ${latency.p99Ms.toFixed(1)} | ${latency.maxMs.toFixed(1)} |`,
  "",
].join("\n");
mkdirSync(args.out, { recursive: true });
writeFileSync(join(args.out, `queue-web${args.smoke ? "-smoke" : ""}.md`), md);
writeFileSync(join(args.out, `queue-web${args.smoke ? "-smoke" : ""}.json`), JSON.stringify({ stamp, args, rows, latency }, null, 2));
console.log(md);
process.exit(0);
