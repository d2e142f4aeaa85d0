// `npm run bench:queue`: the run queue on PostgreSQL and SQLite, measured (never asserted).
//   node bench/queue/run.mjs [--runs N] [--rounds N] [--warmup N] [--workers 1,2,4] [--parked 1000] [--claims 300] [--smoke] [--out DIR]
// - runs per second with 1, 2 and 4 worker processes (and per worker) on an instant loopback model in a process of its own, against
//   runAgent in process (in a process of its own too) on the same machine in the same run (the ratio is the number to read), in rounds
//   (--runs split over --rounds, after --warmup rounds not counted) where runAgent brackets each database's worker rows (half a round
//   before, half after), each row the median of its rounds' ratios to the mean of the two; the same with one worker process on a
//   SQLite file against runAgent in process on another (the worker polls: SQLite tells no other process);
// - submit → first model call across processes (a listening worker, idle between runs);
// - claim latency (p50/p99 of one claim statement) on an empty queue, beside 1000 parked and 10,000 finished runs, and with a backlog of 5,000 queued runs besides;
// - checkpoint bytes written per round as the conversation grows;
// - the cost of 1000 parked runs: bytes in the database and worker slots held (none).
// Needs dist/ (npm run build). Uses DATABASE_URL, or starts a throwaway cluster.
import { fork, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import pg from "pg";
import { startCluster } from "./cluster.mjs";
import { interleaved } from "../measure.mjs";
import { script, scriptedModel } from "./model.mjs";

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, "../..");
const DIST = join(ROOT, "dist");
const args = { runs: 2100, rounds: 7, warmup: 2, workers: [1, 2, 4], parked: 1000, finished: 10_000, backlog: 5_000, claims: 300, starts: 100, out: join(HERE, "..", "results") };
for (let i = 2; i < process.argv.length; i++) {
  if (process.argv[i] === "--runs") args.runs = Number(process.argv[++i]);
  else if (process.argv[i] === "--rounds") args.rounds = Number(process.argv[++i]);
  else if (process.argv[i] === "--warmup") args.warmup = Number(process.argv[++i]);
  else if (process.argv[i] === "--workers") args.workers = process.argv[++i].split(",").map(Number);
  else if (process.argv[i] === "--parked") args.parked = Number(process.argv[++i]);
  else if (process.argv[i] === "--finished") args.finished = Number(process.argv[++i]);
  else if (process.argv[i] === "--backlog") args.backlog = Number(process.argv[++i]);
  else if (process.argv[i] === "--starts") args.starts = Number(process.argv[++i]);
  else if (process.argv[i] === "--claims") args.claims = Number(process.argv[++i]);
  // Tiny sizes, to check the harness (test/bench/bench-smoke.test.ts): its numbers mean nothing.
  else if (process.argv[i] === "--smoke") Object.assign(args, { runs: 8, rounds: 2, warmup: 0, workers: [1], parked: 10, finished: 20, backlog: 20, claims: 5, starts: 3 });
  else if (process.argv[i] === "--out") args.out = resolve(process.argv[++i]);
  else throw new Error(`unknown argument ${process.argv[i]}; use --runs N, --rounds N, --warmup N, --workers 1,2,4, --parked N, --finished N, --backlog N, --claims N, --starts N, --smoke, --out DIR`);
}
if (args.parked % 50 !== 0 && args.parked > 50) throw new Error("--parked must be at most 50 or a multiple of 50");

const load = (file) => import(pathToFileURL(join(DIST, file)).href);
const jianmu = await load("index.js");
const { PostgresRunStore } = await load("postgres.js");
const { SqliteRunStore } = await load("sqlite.js");
const { startOpenAIServer, replies } = await load("testing.js");
const { makeAgents } = await import(pathToFileURL(join(ROOT, "test/queue/fixture-agents.mjs")).href);

/** Runs whose first model call is awaited (submit → first model call), by their script's answer. */
const firstCalls = new Map();
// The instant model in this process: for submit → first model call, which it times as the call arrives.
const server = await startOpenAIServer({ respond: scriptedModel(replies, (answer) => firstCalls.get(answer)?.(performance.now())) });
// The same model in a process of its own for the throughput rows, as a real model is: in this process it
// answered runAgent's calls here without waking another process, and a worker's from across processes.
const modelProcess = fork(join(HERE, "model-server.mjs"), [DIST], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
const { baseURL: modelURL } = await new Promise((resolveModel, rejectModel) => {
  modelProcess.once("message", resolveModel);
  modelProcess.once("exit", (code) => rejectModel(new Error(`the model server exited with ${code}`)));
});

const cluster = process.env.DATABASE_URL ? undefined : await startCluster();
const url = process.env.DATABASE_URL ?? cluster.url;
const sql = new pg.Pool({ connectionString: url, max: 4 });
await sql.query("CREATE TABLE IF NOT EXISTS effects (note text PRIMARY KEY, count integer NOT NULL)");
const percentile = (values, p) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
};
const results = { date: new Date().toISOString(), node: process.version, cpus: cpus().length, runs: args.runs, parkedRuns: args.parked, throughput: [], claim: {}, checkpointBytes: [], parked: {} };

// ---- throughput: in-process runAgent (the baseline) and worker processes, in interleaved rounds ----
// A shared machine's load drifts within a minute: each round measures every contender once, back to
// back, and each row's ratio is the median of its rounds' ratios to the baseline's in the same round, so a
// slow minute costs every row alike.
const child = join(ROOT, "test/postgres/worker-child.mjs");
function spawnWorker(schema, id, sqlite, database = url, baseURL = server.baseURL) {
  // The worker's default poll (1 s): claims come from notifications (PostgreSQL), the file's watch (SQLite) and
  // finishes; the idle workers of the other rows need not poll the database every 100 ms meanwhile.
  const options = { dist: DIST, url: database, schema, baseURL, id, concurrency: 4, leaseMs: 30_000, pollMs: 1_000, quiet: true, ...(sqlite ? { sqlite } : {}) };
  const proc = spawn(process.execPath, [child, JSON.stringify(options)], { stdio: ["ignore", "pipe", "inherit"] });
  let buffer = "";
  const ready = new Promise((resolveReady) => {
    proc.stdout.setEncoding("utf8").on("data", (chunk) => {
      buffer += chunk;
      if (buffer.includes("worker.started")) resolveReady();
      if (buffer.length > 1e6) buffer = buffer.slice(-1000);
    });
  });
  return { proc, ready, exited: new Promise((r) => proc.once("exit", r)) };
}
/**
 * Each PostgreSQL throughput row on a database of its own, in the same cluster: on every NOTIFY
 * PostgreSQL 15 wakes each listening backend of the database, whatever its channel, so the idle
 * workers and stores of the other rows would pay for (and slow) the row measured. With its table of
 * effects: the same side effect as the worker processes' (test/postgres/worker-child.mjs), one row
 * counted per tool call.
 */
const databases = [];
async function databaseFor(name) {
  await sql.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await sql.query(`CREATE DATABASE ${name}`);
  const at = new URL(url);
  at.pathname = `/${name}`;
  const pool = new pg.Pool({ connectionString: at.toString(), max: 4 });
  databases.push(pool);
  await pool.query("CREATE TABLE IF NOT EXISTS effects (note text PRIMARY KEY, count integer NOT NULL)");
  return { url: at.toString() };
}
/**
 * runAgent in process, the baseline of each database's rows, in a process of its own (inproc-child.mjs)
 * as each worker is: it runs the same number of runs as the worker it is compared with and idles while
 * the other rows run. Timed here, from the command to its answer, as a worker's round is from the first
 * submit to the last output.
 */
async function inProcessChild(name, database, options) {
  const proc = fork(join(HERE, "inproc-child.mjs"), [JSON.stringify({ dist: DIST, baseURL: modelURL, ...options })], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
  const answer = () =>
    new Promise((resolveAnswer, rejectAnswer) => {
      const exited = (code) => rejectAnswer(new Error(`${name}: its process exited with ${code}`));
      proc.once("exit", exited);
      proc.once("message", (message) => {
        proc.off("exit", exited);
        if (message.error) rejectAnswer(new Error(`${name}: ${message.error}`));
        else resolveAnswer(message);
      });
    });
  await answer();
  return {
    name,
    database,
    workers: 0,
    async measure(round, runs) {
      const started = performance.now();
      proc.send({ prefix: options.schema ?? "sqlite-inproc", round, runs });
      await answer();
      return runs / ((performance.now() - started) / 1000);
    },
    close() {
      const exited = new Promise((r) => proc.once("exit", r));
      proc.disconnect();
      return exited;
    },
  };
}
const inProcess = await inProcessChild("runAgent in process (concurrency 4, same checkpoints)", "postgres", { url: (await databaseFor("bench_inproc")).url, schema: "bench_inproc" });
const workerPools = [];
for (const count of args.workers) {
  const schema = `bench_w${count}`;
  const database = await databaseFor(schema);
  const workers = Array.from({ length: count }, (_, i) => spawnWorker(schema, `w${i}`, undefined, database.url, modelURL));
  await Promise.all(workers.map((w) => w.ready));
  workerPools.push({
    name: "worker processes (concurrency 4 each)",
    database: "postgres",
    prefix: schema,
    workers: count,
    store: await PostgresRunStore.connect({ connectionString: database.url, schema }),
    async measure(round, runs) {
      const started = performance.now();
      const ids = [];
      for (let i = 0; i < runs; i++) ids.push(await this.store.submit({ agent: "basic", runId: `${this.prefix}-${round}-${i}`, input: script(`${this.prefix}-${round}-${i}`) }));
      // Every output awaited at once, as a caller with many runs in flight does: the store answers them together.
      await Promise.all(ids.map((id) => this.store.wait(id)));
      return runs / ((performance.now() - started) / 1000);
    },
    async close() {
      for (const w of workers) w.proc.kill("SIGTERM");
      await Promise.all(workers.map((w) => w.exited));
      await this.store.close();
    },
  });
}
// ---- the same on SQLite: in process on one file, and one worker process on another (polling: SQLite tells no other process) ----
const sqliteDir = mkdtempSync(join(tmpdir(), "jianmu-bench-sqlite-"));
const sqliteInProcess = await inProcessChild("runAgent in process on SQLite (concurrency 4, same checkpoints)", "sqlite", { sqlite: join(sqliteDir, "inproc.db") });
const sqliteWorker = {
  name: "one worker process on SQLite (concurrency 4)",
  database: "sqlite",
  prefix: "sqlite_w1",
  workers: 1,
  async start() {
    const path = join(sqliteDir, "worker.db");
    this.db = new SqliteRunStore({ path, pollMs: 20 });
    this.worker = spawnWorker(undefined, "sqlite-w0", path, url, modelURL);
    await this.worker.ready;
  },
  measure(round, runs) {
    return workerPools[0].measure.call({ store: this.db, prefix: this.prefix }, round, runs);
  },
  async close() {
    this.worker.proc.kill("SIGTERM");
    await this.worker.exited;
    await this.db.close();
    rmSync(sqliteDir, { recursive: true, force: true });
  },
};
await sqliteWorker.start();
const contenders = [inProcess, ...workerPools, sqliteInProcess, sqliteWorker];
const baselines = [inProcess, sqliteInProcess];
const perRound = Math.max(1, Math.ceil(args.runs / args.rounds));
/** Each contender's runs/s, round by round; a baseline's as [before, after] pairs. */
const rates = new Map(contenders.map((c) => [c, []]));
// Warm-up rounds first, not counted: every contender's code (and its worker processes) is compiled hot
// before it is timed, so the first timed round measures no JIT (each fresh process's first rounds ran far slower).
// A round is a block per database: its baseline for half a round, its worker rows, its baseline for the other half. Each worker row's ratio is
// to the mean of the two baseline rounds around it, so the host's speed, which drifts within seconds on a shared
// machine (a baseline's rounds spread by a quarter within one run), weighs on both sides of the ratio alike. The
// blocks and the rows within a block come in another order each round (measure.mjs's `interleaved`, as
// bench/run.mjs does): what one contender leaves the server to do (autovacuum, the checkpointer's writes) falls on
// another row each time.
for (let round = -args.warmup; round < args.rounds; round++) {
  const rep = round + args.warmup;
  for (const b of interleaved(rep, [...baselines.keys()])) {
    const baseline = baselines[b];
    const rows = contenders.filter((c) => c !== baseline && c.database === baseline.database);
    // Half a round each side, so that the baseline's process runs as many runs as each worker row's (a process
    // keeps getting faster for thousands of runs: one that ran more would be the warmer).
    const half = Math.max(1, Math.round(perRound / 2));
    const before = await baseline.measure(`${round}a`, half);
    const measured = [];
    for (const r of interleaved(rep, [...rows.keys()])) measured.push([rows[r], await rows[r].measure(round, perRound)]);
    const after = await baseline.measure(`${round}b`, half);
    if (round < 0) continue;
    rates.get(baseline).push([before, after]);
    for (const [row, rate] of measured) rates.get(row).push({ rate, ratio: rate / ((before + after) / 2) });
  }
}
for (const contender of contenders) {
  const measured = rates.get(contender);
  const rounds = contender.workers ? measured.map((m) => m.rate) : measured.flat();
  const runsPerSecond = percentile(rounds, 50);
  const ratios = contender.workers ? measured.map((m) => m.ratio) : measured.map(() => 1);
  results.throughput.push({ contender: contender.name, database: contender.database, workers: contender.workers, runsPerSecond, rounds, ratioToInProcess: percentile(ratios, 50), ratios, ...(contender.workers ? { runsPerSecondPerWorker: runsPerSecond / contender.workers } : {}) });
  await contender.close();
}

// ---- submit → first model call, across processes (one idle worker listening) ----
{
  const schema = "bench_start";
  const store = await PostgresRunStore.connect({ connectionString: url, schema });
  const worker = spawnWorker(schema, "starter");
  await worker.ready;
  const samples = [];
  for (let i = 0; i < args.starts; i++) {
    const answer = `start-${i}`;
    const called = new Promise((resolve) => firstCalls.set(answer, resolve));
    const t0 = performance.now();
    const runId = await store.submit({ agent: "basic", input: { messages: [{ role: "user", content: `SCRIPT ${JSON.stringify({ calls: [], answer })}` }] } });
    samples.push((await called) - t0);
    firstCalls.delete(answer);
    await store.wait(runId);
    // Idle between runs, as a queue between requests is: the worker is asleep when the next one comes.
    await new Promise((r) => setTimeout(r, 20));
  }
  results.start = { p50Ms: percentile(samples, 50), p99Ms: percentile(samples, 99) };
  worker.proc.kill("SIGTERM");
  await worker.exited;
  await store.close();
}

// ---- claim latency and the cost of 1000 parked runs ----
{
  const store = await PostgresRunStore.connect({ connectionString: url, schema: "bench_claim" });
  await store.registerAgents(["basic", "approver"]);
  const time = async (n) => {
    const samples = [];
    for (let i = 0; i < n; i++) {
      const id = await store.submit({ agent: "basic", input: script("c") });
      const t0 = performance.now();
      const [claimed] = await store.claim({ owner: "bench", agents: ["basic"], limit: 1, leaseMs: 60_000 });
      samples.push(performance.now() - t0);
      await store.finish(claimed.runId, claimed.token, { status: "succeeded", finalAnswer: "x", messages: [], rounds: 0, usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 }, toolEffects: [], iterations: 0, runId: id, state: {} });
    }
    return { p50Ms: percentile(samples, 50), p99Ms: percentile(samples, 99) };
  };
  results.claim.emptyQueue = await time(args.claims);
  // `args.parked` (1000) parked runs, parked by a real worker.
  const bytesBefore = Number((await sql.query(`SELECT sum(pg_total_relation_size(c.oid)) AS b FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'bench_claim'`)).rows[0].b);
  const worker = spawnWorker("bench_claim", "parker");
  await worker.ready;
  const t0 = performance.now();
  const wave = Math.min(50, args.parked);
  for (let i = 0; i < args.parked; i += wave) {
    await Promise.all(Array.from({ length: wave }, (_, k) => store.submit({ agent: "approver", runId: `parked-${i + k}`, input: { messages: [{ role: "user", content: `SCRIPT ${JSON.stringify({ calls: [{ name: "pay", note: `p${i + k}` }], answer: "paid" })}` }] } })));
  }
  const parkedCount = async () => Number((await sql.query(`SELECT count(*) AS n FROM bench_claim.runs WHERE status = 'awaitingApproval' AND owner IS NULL`)).rows[0].n);
  while ((await parkedCount()) < args.parked) await new Promise((r) => setTimeout(r, 200));
  results.parked.secondsToPark1000 = (performance.now() - t0) / 1000;
  await sql.query("VACUUM ANALYZE bench_claim.runs");
  const bytesAfter = Number((await sql.query(`SELECT sum(pg_total_relation_size(c.oid)) AS b FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'bench_claim'`)).rows[0].b);
  results.parked.bytesPerParkedRun = Math.round((bytesAfter - bytesBefore) / args.parked);
  results.parked.workerSlotsHeld = Number((await sql.query(`SELECT count(*) AS n FROM bench_claim.runs WHERE owner IS NOT NULL`)).rows[0].n);
  worker.proc.kill("SIGTERM");
  await worker.exited;
  // Finished runs stay in the table (history): a claim must not look at them either.
  await sql.query(
    `INSERT INTO bench_claim.runs (run_id, agent, status, output, created_at, updated_at)
     SELECT 'finished-' || g, 'basic', 'succeeded', '{"status":"succeeded"}', 0, 0 FROM generate_series(1, $1::int) g`,
    [args.finished],
  );
  await sql.query("VACUUM ANALYZE bench_claim.runs");
  results.claim.beside1000Parked = await time(args.claims);
  // A backlog besides: runs queued and due at once (a burst of submits, workers down a while). Each claim takes the oldest.
  await sql.query(
    `INSERT INTO bench_claim.runs (run_id, agent, input, status, wake_at, created_at, updated_at)
     SELECT 'backlog-' || g, 'basic', '{}', 'queued', g, g, g FROM generate_series(1, $1::int) g`,
    [args.backlog],
  );
  await sql.query("VACUUM ANALYZE bench_claim.runs");
  results.claim.besideBacklog = await time(args.claims);
  await store.close();
}

// ---- checkpoint bytes per round ----
{
  const store = await PostgresRunStore.connect({ connectionString: url, schema: "bench_bytes" });
  const agents = makeAgents(jianmu, { baseURL: server.baseURL, journal: store, effect: () => undefined });
  const sizes = new Map();
  const counting = {
    save: (runId, record) => {
      const bytes = Buffer.byteLength(JSON.stringify(record));
      sizes.set(record.iteration, [...(sizes.get(record.iteration) ?? []), bytes]);
      return store.save(runId, record);
    },
    load: (id) => store.load(id),
    list: () => store.list(),
    delete: (id) => store.delete(id),
  };
  await jianmu.runAgent(agents.basic, { runId: "bytes", ...script("bytes", 7) }, { checkpoints: counting });
  for (const [round, list] of sizes) results.checkpointBytes.push({ round, saves: list.length, bytesPerSave: Math.round(list.reduce((a, b) => a + b, 0) / list.length), bytesThisRound: list.reduce((a, b) => a + b, 0) });
  await store.close();
}

for (const pool of databases) await pool.end();
await sql.end();
await server.close();
modelProcess.disconnect();
cluster?.stop();

const lines = [
  `# Run queue on PostgreSQL and SQLite (${results.date}, Node ${results.node}, ${results.cpus} cores, ${results.runs} runs per row)`,
  "",
  "Each run: one model turn with a tool call, the tool (one row counted in the contender's database), one model turn with the answer (an instant loopback model; for the throughput rows it runs in a process of its own, as a real model is elsewhere).",
  `Throughput: ${args.rounds} rounds of ${perRound} runs per contender after ${args.warmup} warm-up round(s) not counted; a round is a block per database (runAgent in process for half a round, each worker row, runAgent in process for the other half), the blocks and the rows in another order each round; runs/s is each contender's median round, the ratio the median of its rounds' ratios to the mean of the two in-process rounds around it.`,
  "",
  "| database | contender | workers | runs/s | runs/s per worker | vs in-process on the same database |",
  "| --- | --- | ---: | ---: | ---: | ---: |",
  ...results.throughput.map((r) => `| ${r.database} | ${r.contender} | ${r.workers} | ${r.runsPerSecond.toFixed(1)} | ${r.workers ? r.runsPerSecondPerWorker.toFixed(1) : "—"} | ${r.ratioToInProcess.toFixed(2)}x |`),
  "",
  "| claim latency (one claim statement) | p50 ms | p99 ms |",
  "| --- | ---: | ---: |",
  `| empty queue | ${results.claim.emptyQueue.p50Ms.toFixed(2)} | ${results.claim.emptyQueue.p99Ms.toFixed(2)} |`,
  `| beside ${args.parked} parked and ${args.finished} finished runs | ${results.claim.beside1000Parked.p50Ms.toFixed(2)} | ${results.claim.beside1000Parked.p99Ms.toFixed(2)} |`,
  `| and a backlog of ${args.backlog} queued runs | ${results.claim.besideBacklog.p50Ms.toFixed(2)} | ${results.claim.besideBacklog.p99Ms.toFixed(2)} |`,
  "",
  "| submit → first model call (another process, listening, idle between runs) | p50 ms | p99 ms |",
  "| --- | ---: | ---: |",
  `| one worker | ${results.start.p50Ms.toFixed(2)} | ${results.start.p99Ms.toFixed(2)} |`,
  "",
  `${args.parked} parked runs: ${results.parked.bytesPerParkedRun} bytes each in the database (runs, inbox, journal, indexes), ${results.parked.workerSlotsHeld} worker slots held, parked in ${results.parked.secondsToPark1000.toFixed(1)} s by one concurrency-4 worker.`,
  "",
  "| round | checkpoints saved | bytes per checkpoint | bytes written this round |",
  "| ---: | ---: | ---: | ---: |",
  ...results.checkpointBytes.map((r) => `| ${r.round} | ${r.saves} | ${r.bytesPerSave} | ${r.bytesThisRound} |`),
  "",
];
mkdirSync(args.out, { recursive: true });
writeFileSync(join(args.out, "queue.json"), JSON.stringify(results, null, 2) + "\n");
writeFileSync(join(args.out, "queue.md"), lines.join("\n"));
process.stdout.write(lines.join("\n"));
