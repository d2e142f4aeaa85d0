import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/*
 * The costs issue 19 asks to measure as they arrive, each by a script of its own (they take longer
 * than the main bench, or need PostgreSQL): checkpoint bytes per round with and without compaction
 * (context-checkpoint.mjs), what a store writes and holds for a long run (run-log.mjs, issue 30), runs per second per worker on PostgreSQL (queue/run.mjs), tracing on
 * and off (tracing.mjs). `node bench/run.mjs --all` runs them into the output folder first; without
 * it the report shows their last results found there, with the date they were measured. No targets
 * yet: the rows are information.
 */

const HERE = dirname(fileURLToPath(import.meta.url));

/** The scripts and their arguments: full size, or tiny with `smoke` (the harness check). */
function scripts({ smoke, out }) {
  return [
    { name: "context-checkpoint", args: [join(HERE, "context-checkpoint.mjs"), "--rounds", smoke ? "60" : "500", "--out", out] },
    { name: "run-log", args: [join(HERE, "run-log.mjs"), "--rounds", smoke ? "30" : "500", "--out", out] },
    { name: "tracing", args: [join(HERE, "tracing.mjs"), ...(smoke ? ["--smoke"] : []), "--json", join(out, "tracing.json")] },
    { name: "queue", args: [join(HERE, "queue", "run.mjs"), ...(smoke ? ["--smoke"] : []), "--out", out] },
  ];
}

function runScript({ name, args }) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.setEncoding("utf8").on("data", (text) => (output += text));
    child.stderr.setEncoding("utf8").on("data", (text) => (output += text));
    child.on("exit", (code) => resolve(code === 0 ? { name } : { name, error: `${name} exited with code ${code}:\n${output.slice(-2000)}` }));
  });
}

/** Runs the scripts one after another; resolves with the errors (an empty list when all went well). */
export async function runNewCosts({ smoke, out, log = console.log }) {
  const errors = [];
  for (const script of scripts({ smoke, out })) {
    const t0 = performance.now();
    const { error } = await runScript(script);
    log(`${error ? "failed" : "done"}  ${`new cost: ${script.name}`.padEnd(28)} ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    if (error) errors.push(error);
  }
  return errors;
}

function readJson(dir, file) {
  const path = join(dir, file);
  return existsSync(path) ? JSON.parse(readFileSync(path, "utf8")) : undefined;
}

const kb = (v) => `${(v / 1024).toFixed(1)} KB`;
const bytes = (v) => `${Math.round(v)} B`;
const ms = (v) => `${v.toFixed(2)} ms`;
const rate = (v) => `${v.toFixed(1)} runs/s`;
const day = (date) => (date ? date.slice(0, 10) : "date not recorded");

function info(measure, base, value, format, source, date) {
  const ratio = value / base;
  return { measure, base, value, ratio, baseText: format(base), valueText: format(value), ratioText: `${ratio.toFixed(2)}×`, source, date, result: "info" };
}

function missing(measure, source) {
  return { measure, baseText: "—", valueText: "—", ratioText: "—", source, result: "not measured", note: "not in the output folder: run `node bench/run.mjs --all` (npm run bench:all)" };
}

function checkpointRows(dir) {
  const data = readJson(dir, "context-checkpoint.json");
  const source = "context-checkpoint.md";
  const measures = ["Checkpoint record at the last round (baseline: no compaction; jianmu: trim at 4 000 tokens)", "Checkpoint growth per round over the last marks (same two variants)"];
  const [plain, trimmed, photo] = data?.results ?? [];
  if (!plain || !trimmed) return measures.map((measure) => missing(measure, source));
  const marks = data.marks ?? Object.keys(plain.atRound).map(Number);
  const [before, last] = marks.slice(-2);
  const growth = (r) => r.bytesPerRound ?? (r.atRound[last].total - r.atRound[before].total) / (last - before);
  const rows = [
    info(`Checkpoint record at round ${last} of a ${data.rounds}-round run (baseline: no compaction; jianmu: trim at 4 000 tokens)`, plain.atRound[last].total, trimmed.atRound[last].total, kb, source, data.date),
    info(`Checkpoint growth per round, rounds ${before}→${last} (same two variants)`, growth(plain), growth(trimmed), bytes, source, data.date),
  ];
  // The photo is stored once per run: its checkpoints are the plain run's plus a reference.
  if (photo) rows.push(info(`Checkpoint record at round ${last} with a 200 KB photo in the first message (baseline: the same run without)`, plain.atRound[last].total, photo.atRound[last].total, kb, source, data.date));
  return rows;
}

function runLogRows(dir) {
  const data = readJson(dir, "run-log.json");
  const source = "run-log.md";
  const backends = data?.workloads?.["repeated sentence"];
  if (!backends?.sqlite || !backends.postgres) return [missing("Bytes a store writes in the last round", source), missing("Load of the last checkpoint on SQLite", source)];
  const last = data.marks.at(-1);
  const rows = [];
  for (const [name, b] of Object.entries(backends)) {
    const round = b.rounds[last];
    rows.push(info(`Bytes ${name === "sqlite" ? "SQLite" : "PostgreSQL"} writes in round ${last} of a ${data.rounds}-round run (baseline: the store before, the whole record twice)`, round.beforeStoreBytes, round.bytesWritten, bytes, source, data.date));
  }
  const sqlite = backends.sqlite;
  rows.push(info(`Load of the last checkpoint on SQLite, fresh store (baseline: parse and check the whole record's JSON)`, sqlite.beforeParseMs, sqlite.loadMs, ms, source, data.date));
  return rows;
}

function queueRows(dir) {
  const data = readJson(dir, "queue.json");
  const source = "queue.md";
  if (!data?.throughput?.length) return [missing("Runs per second per worker on PostgreSQL", source)];
  // Results written before the SQLite rows name no database: PostgreSQL.
  const databaseOf = (r) => r.database ?? "postgres";
  const inProcess = (database) => data.throughput.find((r) => r.workers === 0 && databaseOf(r) === database);
  const rows = data.throughput
    .filter((r) => r.workers > 0)
    .map((r) =>
      info(
        `Runs/s per worker on ${databaseOf(r) === "sqlite" ? "SQLite" : "PostgreSQL"}, ${r.workers} worker process${r.workers > 1 ? "es" : ""} of concurrency 4 (${rate(r.runsPerSecond)} in all; baseline: runAgent in process, same store)`,
        inProcess(databaseOf(r)).runsPerSecond,
        r.runsPerSecondPerWorker ?? r.runsPerSecond / r.workers,
        rate,
        source,
        data.date,
      ),
    );
  const saves = data.checkpointBytes ?? [];
  if (saves.length > 1) {
    const [first, last] = [saves[0], saves.at(-1)];
    rows.push(info(`PostgreSQL checkpoint bytes per save, round ${first.round} (baseline) → round ${last.round}`, first.bytesPerSave, last.bytesPerSave, bytes, source, data.date));
  }
  return rows;
}

function tracingRows(dir) {
  const data = readJson(dir, "tracing.json");
  const source = "tracing.json";
  if (!data?.medianMsPerRun) return [missing("Tracing overhead per run", source)];
  const shape = `${data.task.rounds} rounds × ${data.task.parallel} tools, ${data.task.spansPerTracedRun} spans`;
  return [
    info(`Tracing, wall time per run (${shape}; baseline: tracing off)`, data.medianMsPerRun.off.wall, data.medianMsPerRun.on.wall, ms, source, data.date),
    info(`Tracing, CPU time per run (process, server included; baseline: tracing off)`, data.medianMsPerRun.off.cpu, data.medianMsPerRun.on.cpu, ms, source, data.date),
  ];
}

/** The new costs' rows from the result files in `dir`. */
export function newCostRows(dir) {
  return [...checkpointRows(dir), ...runLogRows(dir), ...queueRows(dir), ...tracingRows(dir)];
}

export function newCostsTable(rows) {
  const lines = ["| New cost | baseline | jianmu | ratio | measured (file) |", "| --- | ---: | ---: | ---: | --- |"];
  for (const r of rows) lines.push(`| ${r.measure} | ${r.baseText} | ${r.valueText} | ${r.ratioText} | ${r.note ?? `${day(r.date)} ([${r.source}](${r.source}))`} |`);
  return lines.join("\n");
}
