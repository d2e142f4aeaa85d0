// `node bench/queue/statements.mjs [--runs N] [--json FILE] [--root DIR]`: what one run costs the database, counted
// (never timed): statements by kind (pg_stat_statements), commits (pg_stat_database) and WAL flushes
// (pg_stat_wal, each an fsync with fsync on) per run, for runAgent in process with the store as its
// checkpoints and journal, and for the same runs through a worker process (submit and wait included).
// The runs are bench:queue's (bench/queue/run.mjs): a model turn with a tool call, the tool, the answer.
// Starts its own cluster with pg_stat_statements loaded (DATABASE_URL is not used). Needs dist/ (npm run build).
// --root DIR counts another checkout instead (built, with node_modules), e.g. main before a change.
import { spawn } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import pg from "pg";
import { startCluster } from "./cluster.mjs";

const HERE = dirname(fileURLToPath(import.meta.url));
const args = { runs: 100, json: undefined, root: resolve(HERE, "../..") };
for (let i = 2; i < process.argv.length; i++) {
  if (process.argv[i] === "--runs") args.runs = Number(process.argv[++i]);
  else if (process.argv[i] === "--json") args.json = resolve(process.argv[++i]);
  else if (process.argv[i] === "--root") args.root = resolve(process.argv[++i]);
  else throw new Error(`unknown argument ${process.argv[i]}; use --runs N, --json FILE, --root DIR`);
}
const ROOT = args.root;
const DIST = join(ROOT, "dist");

const load = (file) => import(pathToFileURL(join(DIST, file)).href);
const jianmu = await load("index.js");
const { PostgresRunStore } = await load("postgres.js");
const { startOpenAIServer, replies } = await load("testing.js");
const { makeAgents } = await import(pathToFileURL(join(ROOT, "test/queue/fixture-agents.mjs")).href);

const server = await startOpenAIServer({
  respond: (request) => {
    const messages = request.body.messages ?? [];
    const done = messages.filter((m) => m.role === "tool").length;
    const message = done === 0
      ? { role: "assistant", content: null, tool_calls: [{ id: "call_0", type: "function", function: { name: "record", arguments: JSON.stringify({ note: messages[1]?.content ?? "n" }) } }] }
      : { role: "assistant", content: "ok" };
    return replies.json({ id: "c", object: "chat.completion", created: 1, model: "m", choices: [{ index: 0, message, finish_reason: done === 0 ? "tool_calls" : "stop" }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } });
  },
});
const cluster = await startCluster({ preload: "pg_stat_statements", settings: { "pg_stat_statements.track_planning": "on" } });
const sql = new pg.Pool({ connectionString: cluster.url, max: 2 });
await sql.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
await sql.query("CREATE TABLE IF NOT EXISTS effects (note text PRIMARY KEY, count integer NOT NULL)");
const effect = (note) => sql.query("INSERT INTO effects (note, count) VALUES ($1, 1) ON CONFLICT (note) DO UPDATE SET count = effects.count + 1", [note]);
const input = (id) => ({ messages: [{ role: "user", content: id }] });

// CPU time by process (ms): this process (the model server, runAgent or submit/wait), the worker, the cluster's server processes.
const TICK_MS = 10; // USER_HZ = 100 on Linux
const statOf = (pid) => {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
    return { ppid: Number(fields[1]), cpuMs: (Number(fields[11]) + Number(fields[12])) * TICK_MS };
  } catch {
    return undefined;
  }
};
const postmaster = statOf((await sql.query("SELECT pg_backend_pid() AS pid")).rows[0].pid).ppid;
const serverCpuMs = () => {
  let total = statOf(postmaster)?.cpuMs ?? 0;
  for (const name of readdirSync("/proc")) if (/^\d+$/.test(name) && statOf(name)?.ppid === postmaster) total += statOf(name).cpuMs;
  return total;
};
let workerPid;
const cpu = () => {
  const own = process.cpuUsage();
  return { bench: (own.user + own.system) / 1000, worker: workerPid ? (statOf(workerPid)?.cpuMs ?? 0) : 0, server: serverCpuMs() };
};
const counters = async () => {
  const { rows } = await sql.query(`SELECT (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()) AS commits, wal_sync, wal_write FROM pg_stat_wal`);
  return { commits: Number(rows[0].commits), walSync: Number(rows[0].wal_sync), walWrite: Number(rows[0].wal_write), cpu: cpu(), at: performance.now() };
};
/** Runs `body`, then reads what the database did meanwhile, per run (the counting's own statements left out). */
async function count(name, body) {
  await sql.query("SELECT pg_stat_statements_reset()");
  await sql.query("SELECT pg_stat_reset_shared('wal')");
  await new Promise((r) => setTimeout(r, 600)); // the statistics collector's counters settle
  const before = await counters();
  await body();
  await new Promise((r) => setTimeout(r, 600));
  const after = await counters();
  const { rows } = await sql.query(
    `SELECT regexp_replace(query, '\\s+', ' ', 'g') AS query, calls, plans, total_plan_time AS plan, total_exec_time AS exec FROM pg_stat_statements
     WHERE query NOT LIKE '%pg_stat%' AND query NOT LIKE 'SELECT pg_stat%' ORDER BY calls DESC`,
  );
  const statements = rows.map((r) => ({ query: r.query.slice(0, 140), perRun: Number(r.calls) / args.runs, plansPerRun: Number(r.plans) / args.runs, planMsPerRun: r.plan / args.runs, execMsPerRun: r.exec / args.runs }));
  return {
    name,
    statementsPerRun: statements.reduce((a, s) => a + s.perRun, 0),
    planMsPerRun: statements.reduce((a, s) => a + s.planMsPerRun, 0),
    execMsPerRun: statements.reduce((a, s) => a + s.execMsPerRun, 0),
    // Less the two counting reads' own transactions.
    commitsPerRun: (after.commits - before.commits - 2) / args.runs,
    walSyncsPerRun: (after.walSync - before.walSync) / args.runs,
    // Includes the two settling pauses (1.2 s): CPU is the figure, not the wall time.
    cpuMsPerRun: Object.fromEntries(Object.keys(after.cpu).map((k) => [k, (after.cpu[k] - before.cpu[k]) / args.runs])),
    statements,
  };
}

const results = [];
{
  const store = await PostgresRunStore.connect({ connectionString: cluster.url, schema: "count_inproc" });
  const agents = makeAgents(jianmu, { baseURL: server.baseURL, journal: store, effect });
  results.push(
    await count("runAgent in process (checkpoints and journal in the store)", async () => {
      for (let i = 0; i < args.runs; i++) await jianmu.runAgent(agents.basic, { runId: `inproc-${i}`, ...input(`inproc-${i}`) }, { checkpoints: store });
    }),
  );
  await store.close();
}
{
  const schema = "count_worker";
  const options = { dist: DIST, url: cluster.url, schema, baseURL: server.baseURL, id: "w", concurrency: 1, leaseMs: 30_000, pollMs: 100_000, quiet: true };
  const proc = spawn(process.execPath, [join(ROOT, "test/postgres/worker-child.mjs"), JSON.stringify(options)], { stdio: ["ignore", "pipe", "inherit"] });
  workerPid = proc.pid;
  await new Promise((ready) => proc.stdout.setEncoding("utf8").on("data", (chunk) => chunk.includes("worker.started") && ready()));
  const store = await PostgresRunStore.connect({ connectionString: cluster.url, schema });
  results.push(
    await count("one worker process (submit and wait included), one run at a time", async () => {
      for (let i = 0; i < args.runs; i++) await store.wait(await store.submit({ agent: "basic", runId: `w-${i}`, input: input(`w-${i}`) }));
    }),
  );
  proc.kill("SIGTERM");
  await new Promise((r) => proc.once("exit", r));
  await store.close();
}
await sql.end();
await server.close();
cluster.stop();

for (const r of results) {
  process.stdout.write(`\n## ${r.name}\nper run: ${r.statementsPerRun.toFixed(2)} statements (planning ${r.planMsPerRun.toFixed(2)} ms, executing ${r.execMsPerRun.toFixed(2)} ms), ${r.commitsPerRun.toFixed(2)} commits, ${r.walSyncsPerRun.toFixed(2)} WAL flushes; CPU ms per run: ${Object.entries(r.cpuMsPerRun).map(([k, v]) => `${k} ${v.toFixed(2)}`).join(", ")}\n per run, plans, planning ms, executing ms:\n`);
  for (const s of r.statements) process.stdout.write(`${s.perRun.toFixed(2).padStart(6)} ${s.plansPerRun.toFixed(2).padStart(5)} ${s.planMsPerRun.toFixed(2).padStart(6)} ${s.execMsPerRun.toFixed(2).padStart(6)}  ${s.query}\n`);
}
if (args.json) writeFileSync(args.json, JSON.stringify({ date: new Date().toISOString(), runs: args.runs, results }, null, 2) + "\n");
