// `npm run bench:queue:chaos`: the run queue on PostgreSQL under the faults of the outside chaos report
// (../shared/reports/chaos-3.md), measured and checked, never timed in a test. Worker processes
// (test/postgres/worker-child.mjs on dist/) run scripted runs; every tool call appends one line to a file
// before it returns, so a call that ran twice, or whose result the run lost, shows.
//   node bench/queue/chaos.mjs [--workers 10] [--runs 300] [--max-connections 20] [--pool N] [--no-listen]
//     [--lease-ms 30000] [--kill-every 1000-3000] [--stop-ms 20000] [--restart-at 22000] [--crash] [--odd]
//     [--parked 100000] [--huge 3] [--submit-over 30000] [--timeout 600000] [--smoke] [--out DIR] [--name NAME]
// --pool: each worker store's maxConnections (default: the store's default). --kill-every: kill -9 a random
// worker every MIN-MAX ms and start a replacement, until every run is submitted plus 20 s. --stop-ms: SIGSTOP
// the worker holding the most runs once, 8 s in, for that long. --restart-at: pg_ctl restart -m fast at that
// time; with --crash, -m immediate (a crash: commits not yet on disk, such as claims, may be lost).
// --odd: every third run's tool results and answer carry a NUL and unpaired surrogates. --parked: the
// claim's cost beside that many parked runs (synthetic rows), against an empty queue, in the same run. --huge:
// that many of the runs carry a message just under the input limit (16 Mi characters) among the others.
// Needs dist/ (npm run build). Always starts a cluster of its own (it sets max_connections and restarts it).
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import pg from "pg";
import { startCluster } from "./cluster.mjs";

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, "../..");
const DIST = join(ROOT, "dist");
const CHILD = join(ROOT, "test/postgres/worker-child.mjs");
const args = { workers: 10, runs: 300, maxConnections: 20, pool: undefined, listen: true, leaseMs: 30_000, killEvery: undefined, stopMs: 0, restartAt: undefined, crash: false, odd: false, parked: 0, huge: 0, submitOver: 0, timeout: 600_000, out: join(HERE, "..", "results") };
for (let i = 2; i < process.argv.length; i++) {
  const flag = process.argv[i];
  const next = () => process.argv[++i];
  if (flag === "--workers") args.workers = Number(next());
  else if (flag === "--runs") args.runs = Number(next());
  else if (flag === "--max-connections") args.maxConnections = Number(next());
  else if (flag === "--pool") args.pool = Number(next());
  else if (flag === "--no-listen") args.listen = false;
  else if (flag === "--lease-ms") args.leaseMs = Number(next());
  else if (flag === "--kill-every") args.killEvery = next().split("-").map(Number);
  else if (flag === "--stop-ms") args.stopMs = Number(next());
  else if (flag === "--restart-at") args.restartAt = Number(next());
  else if (flag === "--crash") args.crash = true;
  else if (flag === "--odd") args.odd = true;
  else if (flag === "--parked") args.parked = Number(next());
  else if (flag === "--huge") args.huge = Number(next());
  else if (flag === "--submit-over") args.submitOver = Number(next());
  else if (flag === "--timeout") args.timeout = Number(next());
  // Tiny sizes, to check the harness: its numbers mean nothing.
  else if (flag === "--smoke") Object.assign(args, { workers: 2, runs: 6, parked: 200, leaseMs: 3_000 });
  else if (flag === "--out") args.out = resolve(next());
  // The result files: queue-chaos[-NAME].{md,json}.
  else if (flag === "--name") args.name = next();
  else throw new Error(`unknown argument ${flag}; see the comment at the top of bench/queue/chaos.mjs`);
}
if (!existsSync(join(DIST, "postgres.js"))) throw new Error("dist/ is missing: npm run build first");

const load = (file) => import(pathToFileURL(join(DIST, file)).href);
const { PostgresRunStore } = await load("postgres.js");
const { startOpenAIServer, replies } = await load("testing.js");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const percentile = (values, p) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((p / 100) * values.length))];
const ODD = " nul\u0000 low\udc00 high\ud83d.";

// The scripted model (as test/queue/script-model.ts): each run's script rides in its first user message.
const server = await startOpenAIServer({
  respond: async (request) => {
    const messages = request.body.messages ?? [];
    const script = JSON.parse(messages.find((m) => m.role === "user")?.content.slice("SCRIPT ".length) ?? '{"calls":[],"answer":"x"}');
    const done = messages.filter((m) => m.role === "tool").length;
    const next = script.calls[done];
    if (script.modelDelayMs) await sleep(script.modelDelayMs);
    const message = next
      ? { role: "assistant", content: null, tool_calls: [{ id: `call_${done}`, type: "function", function: { name: "record", arguments: JSON.stringify(next) } }] }
      : { role: "assistant", content: script.answer };
    return replies.json({ id: "c", object: "chat.completion", created: 1, model: "m", choices: [{ index: 0, message, finish_reason: next ? "tool_calls" : "stop" }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } });
  },
});

const cluster = await startCluster({ maxConnections: Math.max(args.maxConnections, 20) });
// A pool of one, so the bench's own statements survive the restart it causes.
const admin = new pg.Pool({ connectionString: cluster.url, max: 1 });
admin.on("error", () => undefined);
const workers = [];
// However the bench ends, it leaves no worker process and no server behind.
let cleaned = false;
const cleanUp = () => {
  if (cleaned) return;
  cleaned = true;
  for (const w of workers) if (w.alive) w.proc.kill("SIGKILL");
  try {
    cluster.stop();
  } catch {
    // Already stopped.
  }
};
process.once("exit", cleanUp);
for (const signal of ["SIGINT", "SIGTERM"]) process.once(signal, () => process.exit(130));
const results = { date: new Date().toISOString(), node: process.version, cpus: cpus().length, args: { ...args, out: undefined }, claim: undefined, chaos: undefined };

// ---- the claim beside parked runs (M2): the same statement with 0 and with N parked, in one run ----
if (args.parked > 0) {
  const store = await PostgresRunStore.connect({ connectionString: cluster.url, schema: "chaos_claim" });
  for (let i = 0; i < 4; i++) await store.submit({ agent: "basic", runId: `due-${i}` });
  const measure = async () => {
    const samples = [];
    for (let i = 0; i < 300; i++) {
      const t0 = performance.now();
      const [run] = await store.claim({ owner: "bench", agents: ["basic", "approver"], limit: 1, leaseMs: 60_000 });
      samples.push(performance.now() - t0);
      await store.release(run.runId, run.token);
    }
    return { p50Ms: percentile(samples, 50), p99Ms: percentile(samples, 99) };
  };
  const empty = await measure();
  // As wide as a parked run's row (its state and pending call; its checkpoints live in their own tables since migration 4).
  await admin.query(`INSERT INTO chaos_claim.runs (run_id, agent, input, status, wake_at, pending, state, created_at, updated_at)
    SELECT 'p' || g, 'approver', '{}', 'awaitingApproval', NULL, '[{"callId":"call_0","name":"pay","arguments":"{}"}]', repeat(md5(g::text), 80), g, g
    FROM generate_series(1, ${args.parked}) g`);
  await admin.query("VACUUM ANALYZE chaos_claim.runs");
  const parked = await measure();
  results.claim = { parked: args.parked, empty, beside: parked };
  await store.close();
}

// ---- the chaos run ----
const dir = mkdtempSync(join(tmpdir(), "jianmu-chaos-"));
const effectsFile = join(dir, "effects.txt");
const schema = "chaos";
const submitter = await PostgresRunStore.connect({ connectionString: cluster.url, schema, maxConnections: 2, listen: false, pollMs: 500 });
const abandonments = [];
let spawned = 0;
function spawnWorker() {
  const id = `w${spawned++}`;
  const options = { dist: DIST, url: cluster.url, schema, baseURL: server.baseURL, id, concurrency: 4, leaseMs: args.leaseMs, pollMs: 500, listen: args.listen, effectsFile, ...(args.pool ? { maxConnections: args.pool } : {}) };
  const proc = spawn(process.execPath, [CHILD, JSON.stringify(options)], { stdio: ["ignore", "pipe", "ignore"] });
  const worker = { id, proc, held: new Set(), counts: {}, alive: true };
  let buffer = "";
  proc.stdout.setEncoding("utf8").on("data", (chunk) => {
    buffer += chunk;
    let newline;
    while ((newline = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, newline);
      buffer = buffer.slice(newline + 1);
      if (!line.trim()) continue;
      const event = JSON.parse(line);
      worker.counts[event.type] = (worker.counts[event.type] ?? 0) + 1;
      if ((event.type === "run.abandoned" || event.type === "run.fenced") && abandonments.length < 20) abandonments.push({ atMs: Math.round(elapsed()), worker: id, ...event });
      if (event.type === "run.claimed") worker.held.add(event.runId);
      else if (["run.finished", "run.parked", "run.fenced", "run.abandoned", "run.released"].includes(event.type)) worker.held.delete(event.runId);
    }
  });
  proc.once("exit", () => (worker.alive = false));
  workers.push(worker);
  return worker;
}
for (let i = 0; i < args.workers; i++) spawnWorker();

const chaos = { kills: 0, stopped: undefined, restartMs: undefined, peakConnections: 0 };
const started = performance.now();
const elapsed = () => performance.now() - started;
let submitting = true;
const sampler = setInterval(() => {
  admin
    .query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE backend_type = 'client backend'")
    .then(({ rows }) => (chaos.peakConnections = Math.max(chaos.peakConnections, rows[0].n)))
    .catch(() => undefined);
}, 250);
const timers = [];
if (args.killEvery) {
  const [min, max] = args.killEvery;
  let lastSubmit = Infinity;
  const killOne = () => {
    if (elapsed() > lastSubmit + 20_000) return;
    const alive = workers.filter((w) => w.alive && w !== chaos.stoppedWorker);
    const victim = alive[Math.floor(Math.random() * alive.length)];
    if (victim) {
      victim.proc.kill("SIGKILL");
      chaos.kills += 1;
      spawnWorker();
    }
    if (!submitting && lastSubmit === Infinity) lastSubmit = elapsed();
    timers.push(setTimeout(killOne, min + Math.random() * (max - min)));
  };
  timers.push(setTimeout(killOne, min));
}
if (args.stopMs > 0) {
  timers.push(
    setTimeout(() => {
      const busiest = workers.filter((w) => w.alive).sort((a, b) => b.held.size - a.held.size)[0];
      if (!busiest) return;
      chaos.stoppedWorker = busiest;
      chaos.stopped = { worker: busiest.id, heldRuns: busiest.held.size };
      busiest.proc.kill("SIGSTOP");
      timers.push(setTimeout(() => busiest.proc.kill("SIGCONT"), args.stopMs));
    }, 8_000),
  );
}
if (args.restartAt !== undefined) {
  timers.push(
    setTimeout(async () => {
      const t0 = performance.now();
      await cluster.restart(args.crash ? "immediate" : "fast").catch(() => undefined);
      chaos.restartMs = Math.round(performance.now() - t0);
    }, args.restartAt),
  );
}

const ids = [];
for (let i = 0; i < args.runs; i++) {
  const runId = `run-${i}`;
  const odd = args.odd && i % 3 === 0 ? ODD : "";
  const calls = Array.from({ length: 2 + (i % 2) }, (_, k) => ({ note: `${runId}:${k}${odd}`, sleepMs: 50 + ((i * 7 + k * 13) % 6) * 50 }));
  const input = { messages: [{ role: "user", content: `SCRIPT ${JSON.stringify({ calls, answer: `done ${runId}${odd}`, modelDelayMs: 20 })}` }] };
  // Every (runs / huge)-th run: a message just under the input limit (its JSON, escaped, too).
  if (args.huge > 0 && i % Math.floor(args.runs / args.huge) === 1) input.messages.push({ role: "user", content: "x".repeat(16 * 1024 * 1024 - 4096) });
  for (;;) {
    try {
      await submitter.submit({ agent: "basic", runId, input });
      break;
    } catch (error) {
      // The server restarting, or out of connections: the submit is idempotent by runId.
      if (error?.problem !== "connection") throw error;
      chaos.submitRetries = (chaos.submitRetries ?? 0) + 1;
      await sleep(200);
    }
  }
  ids.push(runId);
  if (args.submitOver > 0) await sleep(args.submitOver / args.runs);
}
submitting = false;

const deadline = Date.now() + args.timeout;
const outputs = new Map();
const controller = new AbortController();
const overtime = setTimeout(() => controller.abort(new Error("timed out")), args.timeout);
await Promise.all(
  ids.map(async (runId) => {
    try {
      outputs.set(runId, await submitter.wait(runId, { signal: controller.signal }));
    } catch {
      // Stuck: counted below.
    }
  }),
);
clearTimeout(overtime);
const seconds = elapsed() / 1000;
clearInterval(sampler);
for (const t of timers) clearTimeout(t);
for (const w of workers) if (w.alive) w.proc.kill("SIGCONT");
for (const w of workers) if (w.alive) w.proc.kill("SIGKILL");

// ---- what happened ----
const lines = existsSync(effectsFile) ? readFileSync(effectsFile, "utf8").split("\n").filter(Boolean).map((l) => l.split(" ")[0]) : [];
const perEffect = new Map();
for (const note of lines) perEffect.set(note, (perEffect.get(note) ?? 0) + 1);
const planned = ids.reduce((sum, _, i) => sum + 2 + (i % 2), 0);
const observations = [...outputs.values()].flatMap((o) => o.messages.filter((m) => m.role === "tool").map((m) => String(m.content)));
// A tool result lost: the tool acted (its effect line), but its run's conversation does not hold what it returned.
const lost = [...perEffect.keys()].filter((note) => {
  const output = outputs.get(note.slice(0, note.lastIndexOf(":")));
  return !output?.messages.some((m) => m.role === "tool" && (String(m.content) === `recorded ${note}` || String(m.content).startsWith(`recorded ${note} `)));
});
const journal = await admin.query(`SELECT state, count(*)::int AS n FROM ${schema}.tool_journal GROUP BY state ORDER BY state`);
const everyEvent = workers.flatMap((w) => Object.entries(w.counts));
const eventCount = (type) => everyEvent.filter(([t]) => t === type).reduce((sum, [, n]) => sum + n, 0);
const oddRuns = ids.filter((_, i) => args.odd && i % 3 === 0);
results.chaos = {
  workers: args.workers,
  runs: args.runs,
  seconds,
  succeeded: [...outputs.values()].filter((o) => o.status === "succeeded").length,
  failed: [...outputs.values()].filter((o) => o.status === "failed").length,
  stuck: ids.length - outputs.size,
  plannedCalls: planned,
  effectLines: lines.length,
  distinctEffects: perEffect.size,
  duplicatedEffects: [...perEffect.values()].filter((n) => n > 1).length,
  outcomeUnknown: observations.filter((t) => t.includes("was interrupted")).length,
  journalUnavailable: observations.filter((t) => t.includes("journal could not")).length,
  resultsLost: lost.length,
  journalRows: Object.fromEntries(journal.rows.map((r) => [r.state, r.n])),
  hugeRuns: args.huge,
  oddRunsExact: oddRuns.filter((runId) => outputs.get(runId)?.finalAnswer === `done ${runId}${ODD}`).length,
  oddRuns: oddRuns.length,
  kills: chaos.kills,
  stopped: chaos.stopped,
  restartMs: chaos.restartMs,
  submitRetries: chaos.submitRetries ?? 0,
  peakConnections: chaos.peakConnections,
  abandonments,
  // Why each failed run failed (the first 20): a fault the queue should have ridden out shows here by name.
  failures: [...outputs.entries()].filter(([, o]) => o.status === "failed").slice(0, 20).map(([runId, o]) => ({ runId, termination: o.termination })),
  events: { claimed: eventCount("run.claimed"), finished: eventCount("run.finished"), abandoned: eventCount("run.abandoned"), fenced: eventCount("run.fenced"), workerErrors: eventCount("worker.error") },
};

await submitter.close();
await admin.end();
await server.close();
cleanUp();
rmSync(dir, { recursive: true, force: true });

const c = results.chaos;
const report = [
  `# Run queue chaos (${results.date}, Node ${results.node}, ${results.cpus} cores)`,
  "",
  `${c.workers} worker processes (concurrency 4, lease ${args.leaseMs} ms, pool ${args.pool ?? "default"}${args.listen ? "" : ", no LISTEN"}) on a server with max_connections=${args.maxConnections}; ` +
    `${c.runs} runs of 2-3 tool calls${args.odd ? ", every third carrying NUL and unpaired surrogates" : ""}${args.huge ? `, ${args.huge} with a 16 MiB message` : ""}. ` +
    `Chaos: ${c.kills} kill -9${c.stopped ? `, SIGSTOP of ${c.stopped.worker} (holding ${c.stopped.heldRuns} runs) for ${args.stopMs} ms` : ""}${c.restartMs !== undefined ? `, a ${c.restartMs} ms ${args.crash ? "crash and recovery" : "restart"} of PostgreSQL` : ""}.`,
  "",
  "| finished in | succeeded | failed | stuck | planned calls | effect lines / distinct / duplicated | outcome unknown | tool results lost | journal unavailable | journal rows | odd data kept exactly | peak connections |",
  "| ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | --- | --- | ---: |",
  `| ${c.seconds.toFixed(1)} s | ${c.succeeded} | ${c.failed} | ${c.stuck} | ${c.plannedCalls} | ${c.effectLines} / ${c.distinctEffects} / ${c.duplicatedEffects} | ${c.outcomeUnknown} | ${c.resultsLost} | ${c.journalUnavailable} | ${JSON.stringify(c.journalRows)} | ${c.oddRunsExact}/${c.oddRuns} | ${c.peakConnections} |`,
  "",
  `Worker events: ${JSON.stringify(c.events)}; submit retries: ${c.submitRetries}.`,
  "",
  ...(results.claim
    ? [
        "| claim (one statement, 300 samples) | p50 ms | p99 ms |",
        "| --- | ---: | ---: |",
        `| empty queue | ${results.claim.empty.p50Ms.toFixed(2)} | ${results.claim.empty.p99Ms.toFixed(2)} |`,
        `| beside ${results.claim.parked} parked runs | ${results.claim.beside.p50Ms.toFixed(2)} | ${results.claim.beside.p99Ms.toFixed(2)} |`,
        "",
        `Ratio beside / empty (p50): ${(results.claim.beside.p50Ms / results.claim.empty.p50Ms).toFixed(2)}x.`,
        "",
      ]
    : []),
];
mkdirSync(args.out, { recursive: true });
const stem = args.name ? `queue-chaos-${args.name}` : "queue-chaos";
writeFileSync(join(args.out, `${stem}.json`), JSON.stringify(results, null, 2) + "\n");
writeFileSync(join(args.out, `${stem}.md`), report.join("\n"));
process.stdout.write(report.join("\n"));
