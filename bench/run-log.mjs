import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import Database from "better-sqlite3";
import pg from "pg";
import { z } from "zod";
import { startCluster } from "./queue/cluster.mjs";

/*
 * One log per run (issue 30), measured on SQLite and PostgreSQL: a 500-round run (one tool call per
 * round, ~350-character results, the run of context-checkpoint.mjs) checkpointed at every stable
 * state with the store as its journal, as `runAgent({ checkpoints })` does.
 *
 *   npm run build && node bench/run-log.mjs [--rounds N] [--out DIR]
 *
 * - bytes written per round at rounds 10, 100 and 500: every value the store hands the database in
 *   its writes (statement parameters of INSERT/UPDATE; the driver's calls are counted), against the
 *   messages that round added and against what the store before this one wrote (the whole record,
 *   twice a round: its size is measured in the same run);
 * - `load` at the last round, on a store opened afresh (nothing cached), median of 15, against
 *   `readPersisted` of the whole record's JSON text (what the store before did after reading its row);
 * - the store's total for the run against its messages' JSON: SQLite's file (pages in use) and
 *   PostgreSQL's tables and indexes after VACUUM FULL, and the stored values alone.
 * Timings are for reading, never asserted.
 */

const HERE = dirname(fileURLToPath(import.meta.url));
const DIST = join(HERE, "..", "dist");
const option = (name, fallback) => {
  const at = process.argv.indexOf(`--${name}`);
  return at > 0 ? process.argv[at + 1] : fallback;
};
const ROUNDS = Number(option("rounds", 500));
const OUT = resolve(option("out", join(HERE, "results")));
// Rounds counted from 1: the 10th, the 100th and the last tool round.
const MARKS = [...new Set([10, 100, 500, ROUNDS])].filter((n) => n <= ROUNDS).sort((a, b) => a - b);
// A run id as runAgent and the queue make them (a UUID): it is in every checkpoint's and journal entry's row.
const RUN_ID = "6f1c2a4e-8d3b-4f7a-9c5e-2b1d0e9f8a7c";
const load = (file) => import(pathToFileURL(join(DIST, file)).href);
const jianmu = await load("index.js");
const { SqliteCheckpointStore } = await load("sqlite.js");
const { PostgresRunStore } = await load("postgres.js");
const { scriptedModel } = await load("testing.js");

// ---- counting what reaches the database ----------------------------------------------------------
const counter = { bytes: 0 };
const sizeOf = (value) => (value === null || value === undefined ? 0 : Buffer.isBuffer(value) ? value.length : typeof value === "string" ? Buffer.byteLength(value) : Array.isArray(value) ? value.reduce((n, v) => n + sizeOf(v), 0) : 8);
const isWrite = (sql) => !/^\s*SELECT\b/i.test(sql) && /\b(INSERT|UPDATE)\b/i.test(sql);
{
  const probe = new Database(":memory:");
  const Statement = Object.getPrototypeOf(probe.prepare("SELECT 1"));
  const run = Statement.run;
  Statement.run = function (...params) {
    if (isWrite(this.source)) counter.bytes += params.reduce((n, p) => n + (p && typeof p === "object" && !Buffer.isBuffer(p) ? Object.values(p).reduce((m, v) => m + sizeOf(v), 0) : sizeOf(p)), 0);
    return run.apply(this, params);
  };
  probe.close();
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (text, values, ...rest) {
    // The store sends `{ name, text, values }` (a prepared statement) or `(text, values)`.
    const [sql, params] = typeof text === "object" && text !== null ? [text.text, text.values] : [text, values];
    if (typeof sql === "string" && Array.isArray(params) && isWrite(sql)) counter.bytes += sizeOf(params);
    return query.call(this, text, values, ...rest);
  };
}

/*
 * What the tool returns each round: the issue's workload (context-checkpoint.mjs: the same sentence
 * over and over), and text that compresses like prose (words drawn from a vocabulary by a seeded
 * generator), so that nothing here rests on how well one repeated sentence compresses. The words are
 * picked by the generator's high bits: its low bits repeat with a short period (a linear
 * congruential generator modulo 2^31), which drew the same two words in turn ("1a6 10ps64g 1a6
 * 10ps64g ...") and made a result deflate to 45% instead of the ~72% of 55 distinct words.
 */
const VOCABULARY = Array.from({ length: 2048 }, (_, i) => (i * 2654435761 >>> 0).toString(36).slice(0, 3 + (i % 6)));
const WORKLOADS = {
  "repeated sentence": (id) => `record ${id}: ${"lorem ipsum dolor sit amet ".repeat(12)}`,
  "varied words": (id) => {
    let seed = id * 7919 + 1;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2147483648);
    return `record ${id}: ${Array.from({ length: 55 }, () => VOCABULARY[(next() >>> 16) % VOCABULARY.length]).join(" ")}`;
  },
};
let workload = WORKLOADS["repeated sentence"];
const lookup = jianmu.defineTool({
  name: "lookup",
  description: "Look a record up",
  parameters: z.object({ id: z.number() }),
  execute: ({ id }) => workload(id),
});

/** Run the rounds into `store`; what was written by each round, and the run's record at each mark. */
async function run(store, runId, rounds = ROUNDS) {
  const script = [...Array.from({ length: rounds }, (_, i) => ({ toolCalls: [{ id: `call_${i}`, name: "lookup", arguments: { id: i } }] })), { content: "done" }];
  const machine = jianmu.createReactMachine({ modelClient: scriptedModel(script), tools: [lookup], journal: store, config: { maxIterations: rounds + 1 }, configFile: false });
  // At each model call's checkpoint: bytes written so far, the conversation's size, the record's size.
  const atRound = new Map();
  const measuring = Object.create(store);
  measuring.save = (id, record) => {
    const result = store.save(id, record);
    const { state } = record.snapshot.context;
    if (record.state.endsWith("AgentLLM")) {
      const mark = () => atRound.set(state.rounds, { bytes: counter.bytes, messageBytes: Buffer.byteLength(JSON.stringify(state.messages)), recordBytes: Buffer.byteLength(JSON.stringify(record)) });
      return result && typeof result.then === "function" ? result.then(mark) : mark();
    }
    return result;
  };
  const output = await jianmu.runAgent(machine, { runId, messages: [jianmu.human("Read every record.")] }, { checkpoints: measuring });
  if (output.status !== "succeeded") throw new Error(`the run failed: ${output.termination?.reason}`);
  if (rounds !== ROUNDS) return undefined;
  // Round k (from 1) runs from the model call with k - 1 rounds done to the one with k done.
  const marks = {};
  for (const mark of MARKS) {
    const [start, end] = [atRound.get(mark - 1), atRound.get(mark)];
    marks[mark] = { bytesWritten: end.bytes - start.bytes, newMessageBytes: end.messageBytes - start.messageBytes, beforeStoreBytes: start.recordBytes + end.recordBytes };
  }
  return { rounds: marks, messagesJson: Buffer.byteLength(JSON.stringify(output.messages)) };
}

const LOADS = 31;
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
/** Load the run's latest checkpoint on a store opened afresh each time (nothing cached), against parsing and checking the whole record's JSON text; wall and CPU time. */
async function timeLoads(open, runId) {
  const times = [];
  let record;
  const cpu = [];
  for (let i = 0; i < LOADS; i++) {
    const store = await open();
    const [t0, c0] = [performance.now(), process.cpuUsage()];
    record = await store.load(runId);
    times.push(performance.now() - t0);
    const c = process.cpuUsage(c0);
    cpu.push((c.user + c.system) / 1000);
    await store.close();
  }
  const text = JSON.stringify(record);
  const before = [];
  for (let i = 0; i < LOADS; i++) {
    const t0 = performance.now();
    jianmu.readPersisted(text);
    before.push(performance.now() - t0);
  }
  // Other processes on the machine stretch wall times (not CPU times): say how busy it was.
  return { loadMs: median(times), loadMinMs: Math.min(...times), loadCpuMs: median(cpu), beforeParseMs: median(before), beforeParseMinMs: Math.min(...before), loadAverage: loadavg()[0] };
}

async function sqlite(work) {
  const path = join(work, "run-log.db");
  const pagesInUse = () => {
    const raw = new Database(path);
    raw.pragma("wal_checkpoint(TRUNCATE)");
    const bytes = (raw.pragma("page_count", { simple: true }) - raw.pragma("freelist_count", { simple: true })) * raw.pragma("page_size", { simple: true });
    raw.close();
    return bytes;
  };
  const store = new SqliteCheckpointStore({ path });
  // A store in use: a short run first, so that what is measured is what one more run adds.
  await run(store, "warm-up", 20);
  const empty = pagesInUse();
  const measured = await run(store, RUN_ID);
  const usage = store.usage(RUN_ID);
  store.close();
  const loads = await timeLoads(async () => new SqliteCheckpointStore({ path }), RUN_ID);
  return { ...measured, usage, ...loads, storeBytes: pagesInUse() - empty };
}

async function postgres(url, schema) {
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  // Each table's rows (heap and TOAST) and its indexes.
  const tablesBytes = async () => {
    for (const table of ["runs", "checkpoints", "streams", "items", "tool_journal"]) await admin.query(`VACUUM FULL ${schema}.${table}`);
    const { rows } = await admin.query(
      `SELECT c.relname AS table, pg_total_relation_size(c.oid) - pg_indexes_size(c.oid) AS rows, pg_indexes_size(c.oid) AS indexes FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r'`,
      [schema],
    );
    return Object.fromEntries(rows.map((r) => [r.table, { rows: Number(r.rows), indexes: Number(r.indexes) }]));
  };
  const added = (after, before) =>
    Object.fromEntries(Object.entries(after).map(([table, b]) => [table, { rows: b.rows - (before[table]?.rows ?? 0), indexes: b.indexes - (before[table]?.indexes ?? 0) }]).filter(([, b]) => b.rows + b.indexes !== 0));
  await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  const store = await PostgresRunStore.connect({ connectionString: url, schema, listen: false });
  await run(store, "warm-up", 20);
  const empty = await tablesBytes();
  const measured = await run(store, RUN_ID);
  const usage = await store.usage(RUN_ID);
  await store.close();
  const loads = await timeLoads(() => PostgresRunStore.connect({ connectionString: url, schema, listen: false }), RUN_ID);
  const tables = added(await tablesBytes(), empty);
  await admin.query(`DROP SCHEMA ${schema} CASCADE`);
  await admin.end();
  return { ...measured, usage, ...loads, tables, storeBytes: Object.values(tables).reduce((n, t) => n + t.rows + t.indexes, 0) };
}

const results = { date: new Date().toISOString(), node: process.version, cores: availableParallelism(), rounds: ROUNDS, marks: MARKS, workloads: {} };
const work = mkdtempSync(join(tmpdir(), "jianmu-bench-log-"));
const cluster = process.env.DATABASE_URL ? undefined : await startCluster();
try {
  for (const [name, results_] of Object.entries(WORKLOADS)) {
    workload = results_;
    rmSync(join(work, "run-log.db"), { force: true });
    results.workloads[name] = {
      sqlite: await sqlite(work),
      postgres: await postgres(process.env.DATABASE_URL ?? cluster.url, "bench_run_log"),
    };
  }
} finally {
  cluster?.stop();
  rmSync(work, { recursive: true, force: true });
}

const kb = (n) => `${(n / 1024).toFixed(1)} KB`;
const lines = [
  `# One log per run: a ${ROUNDS}-round run on SQLite and PostgreSQL (${results.date.slice(0, 10)}, Node ${results.node})`,
  "",
  "Bytes written in the Nth round: every value the store handed the database in its writes during that round (two checkpoints, the journal's two entries, the new elements), next to the messages the round added and to what the store before this one wrote in that round (the whole record, twice).",
  "",
];
for (const [name, backends] of Object.entries(results.workloads)) {
  lines.push(`## Tool results: ${name}`, "", `| backend | ${MARKS.map((m) => `round ${m}`).join(" | ")} |`, `| --- | ${MARKS.map(() => "---").join(" | ")} |`);
  for (const [backend, b] of Object.entries(backends)) {
    lines.push(`| ${backend} | ${MARKS.map((m) => `${b.rounds[m].bytesWritten} B (new messages ${b.rounds[m].newMessageBytes} B, +${b.rounds[m].bytesWritten - b.rounds[m].newMessageBytes} B; before: ${kb(b.rounds[m].beforeStoreBytes)})`).join(" | ")} |`);
  }
  lines.push("", "| backend | load at the last round, fresh store (median, min; CPU median) | the store before: parse + check the record (median, min) | machine's load average (cores) | what the run added to the store | its messages' JSON | ratio |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
  for (const [backend, b] of Object.entries(backends)) {
    lines.push(`| ${backend} | ${b.loadMs.toFixed(2)} ms, ${b.loadMinMs.toFixed(2)} ms; CPU ${b.loadCpuMs.toFixed(2)} ms | ${b.beforeParseMs.toFixed(2)} ms, ${b.beforeParseMinMs.toFixed(2)} ms | ${b.loadAverage.toFixed(1)} (${results.cores}) | ${kb(b.storeBytes)} | ${kb(b.messagesJson)} | ${(b.storeBytes / b.messagesJson).toFixed(2)}x |`);
  }
  const u = backends.sqlite.usage;
  lines.push("", `Rows: ${u.checkpoints} checkpoints (${kb(u.checkpointBytes)} of bodies), ${u.streams} streams, ${u.items} elements (${kb(u.itemChars)}), ${u.journalEntries} journal entries.`);
  lines.push(`PostgreSQL by table (rows with TOAST / indexes): ${Object.entries(backends.postgres.tables).map(([table, t]) => `${table} ${kb(t.rows)} / ${kb(t.indexes)}`).join(", ")}.`, "");
}
lines.push(
  "What the run added: SQLite's pages in use after a WAL checkpoint, PostgreSQL's tables with their indexes and TOAST after VACUUM FULL, each less what the store held after a 20-round run before it (so a table's first pages, there for any run, do not count). Load: median of 31, each on a store opened afresh (nothing cached), wall time and the process's CPU time; the comparison is `readPersisted` of the record's JSON text, what the store before did after reading its row. On a machine busier than its cores (load average above the core count) the wall median measures the waiting for a core, not the load: read the CPU median and the minimum then.",
  "",
);
const text = lines.join("\n");
console.log(text);
mkdirSync(OUT, { recursive: true });
writeFileSync(join(OUT, "run-log.json"), JSON.stringify(results, null, 2) + "\n");
writeFileSync(join(OUT, "run-log.md"), text);
