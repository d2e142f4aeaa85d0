import { mkdirSync, renameSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { measureImport } from "./import.mjs";
import { interleaved } from "./measure.mjs";
import { NAMES as CONTENDER_NAMES } from "./scenarios.mjs";
import { newCostRows, newCostsTable, runNewCosts } from "./new-costs.mjs";
import { runClient, startServer, warningPattern } from "./processes.mjs";
import { buildRows, environment, markdownReport, markdownTable } from "./report.mjs";

/*
 * `npm run bench`: starts the scripted server process, runs every scenario in client processes
 * of their own, prints the table and writes bench/results/latest.{md,json}.
 *
 *   node bench/run.mjs [--smoke] [--all] [--out DIR] [--only latency,throughput,...,import]
 *
 * --smoke runs one repetition at tiny sizes (it checks the harness, its numbers mean nothing).
 * --all also runs the new costs' scripts (new-costs.mjs: checkpoint bytes, the PostgreSQL queue,
 * tracing) into DIR first; without it the report shows their results last written to DIR.
 * Needs the compiled library (dist/, built by `npm ci` or `npm run build`).
 */

const HERE = dirname(fileURLToPath(import.meta.url));

function parseArgs(argv) {
  const args = { smoke: false, all: false, out: join(HERE, "results"), only: undefined };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--smoke") args.smoke = true;
    else if (arg === "--all") args.all = true;
    else if (arg === "--out") args.out = resolve(argv[++i] ?? "");
    else if (arg === "--only") args.only = new Set((argv[++i] ?? "").split(","));
    else throw new Error(`unknown argument ${arg}; use --smoke, --all, --out DIR, --only a,b`);
  }
  return args;
}

const FULL = {
  latency: { reps: 500, warmup: 150 },
  throughput: { reps: 30, runs: 250, concurrency: 100, warmup: 100 },
  firstToken: { reps: 200, warmup: 20, pause: 20 },
  parallelTools: { reps: 20, warmup: 3, probeRuns: 2, stream: true },
  memory: { reps: 3, agents: 1000, warmupRuns: 300, stream: true },
  retention: { reps: 3, batches: 6, batchRuns: 300, batchConcurrency: 20, stream: true },
  persistence: { iterations: 300, historySize: 200 },
  import: { reps: 10 },
};

const SMOKE = {
  latency: { reps: 1, warmup: 1 },
  throughput: { reps: 1, runs: 10, concurrency: 5, warmup: 5 },
  firstToken: { reps: 2, warmup: 1, pause: 5 },
  parallelTools: { reps: 1, warmup: 1, probeRuns: 1, stream: true },
  memory: { reps: 1, agents: 20, warmupRuns: 10, stream: true },
  retention: { reps: 1, batches: 1, batchRuns: 10, batchConcurrency: 5, stream: true },
  persistence: { iterations: 3, historySize: 200 },
  import: { reps: 1 },
};

/**
 * Node flags of the client processes. Retention runs without the optimizing tiers and without
 * bytecode flushing, so that only objects, not compiled code, make the heap grow or shrink.
 */
const EXEC_ARGV = {
  default: ["--expose-gc"],
  retention: ["--expose-gc", "--no-opt", "--no-sparkplug", "--no-flush-bytecode"],
};

/** Every client process to start, in order: [result key, job]. */
function plan(sizes) {
  const jobs = [
    ["latencyWhole", { scenario: "latency", stream: false, ...sizes.latency }],
    ["latencyStream", { scenario: "latency", stream: true, ...sizes.latency }],
    ["throughputWhole", { scenario: "throughput", stream: false, ...sizes.throughput }],
    ["throughputStream", { scenario: "throughput", stream: true, ...sizes.throughput }],
    ["firstToken", { scenario: "firstToken", ...sizes.firstToken }],
    ["firstTokenInProcess", { scenario: "firstToken", inProcess: true, ...sizes.firstToken }],
    ["parallelTools", { scenario: "parallelTools", ...sizes.parallelTools }],
  ];
  // One process per contender and repetition, taking turns at going first.
  for (const scenario of ["memory", "retention"]) {
    const { reps, ...size } = sizes[scenario];
    for (let rep = 0; rep < reps; rep++) {
      for (const contender of interleaved(rep, CONTENDER_NAMES)) {
        jobs.push([`${scenario}.${contender}`, { scenario, contender, ...size }]);
      }
    }
  }
  jobs.push(["persistence", { scenario: "persistence", ...sizes.persistence }]);
  // Fresh processes of its own (import.mjs), no server.
  jobs.push(["coldImport", { scenario: "import", ...sizes.import }]);
  return jobs;
}

/** The cold-import job, answered like a client process: `{ result }` or `{ error }`. */
async function coldImport({ reps }) {
  try {
    const { subjects } = await measureImport({ reps });
    // The report reads { ms, heapMB } per subject; heap is already over an empty process's.
    const figures = ({ ms, cpuMs, heapBytes }) => ({ ms, cpuMs, heapMB: heapBytes / (1024 * 1024) });
    return { result: { reps, empty: figures(subjects.empty), peers: figures(subjects.peers), base: figures(subjects.floor), jianmu: figures(subjects.jianmu), aisdk: figures(subjects.aisdk) } };
  } catch (error) {
    return { error: String(error?.stack ?? error) };
  }
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const sizes = args.smoke ? SMOKE : FULL;
  const started = performance.now();
  const stderrLines = [];
  const warnings = new Set();
  process.on("warning", (warning) => warnings.add(`${warning.name}: ${warning.message}`));
  const server = startServer(stderrLines);
  await server.ready;

  const perContender = () => Object.fromEntries(CONTENDER_NAMES.map((name) => [name, []]));
  const results = { memory: perContender(), retention: perContender() };
  const errors = [];
  try {
    for (const [key, job] of plan(sizes)) {
      if (args.only && !args.only.has(job.scenario)) continue;
      const t0 = performance.now();
      const answer = job.scenario === "import" ? await coldImport(job) : await runClient({ ...job, baseURL: await server.restart() }, stderrLines, { execArgv: EXEC_ARGV[job.scenario] ?? EXEC_ARGV.default });
      for (const warning of answer.warnings ?? []) warnings.add(warning);
      const label = job.contender ? `${job.scenario} (${job.contender})` : `${job.scenario}${job.stream === false ? " (non-streaming)" : job.stream ? " (streaming)" : job.inProcess ? " (in process)" : ""}`;
      console.log(`${answer.error ? "failed" : "done"}  ${label.padEnd(28)} ${((performance.now() - t0) / 1000).toFixed(1)} s`);
      if (answer.error) {
        errors.push(`${label}: ${answer.error}`);
        continue;
      }
      if (job.contender) results[job.scenario][job.contender].push(answer.result);
      else results[key] = answer.result;
    }
  } finally {
    await server.stop();
  }
  if (args.all) errors.push(...(await runNewCosts({ smoke: args.smoke, out: args.out })));
  const newCosts = newCostRows(args.out);
  for (const line of stderrLines) {
    const match = warningPattern.exec(line);
    if (match) warnings.add(match[1]);
  }

  const env = environment();
  const warningList = [...warnings];
  const rows = buildRows(results, warningList);
  const durationSec = (performance.now() - started) / 1000;
  console.log(`\n${markdownTable(rows)}\n\n${newCostsTable(newCosts)}\n`);
  if (warningList.length > 0) console.log(`Warnings:\n${warningList.map((w) => `  ${w}`).join("\n")}\n`);
  if (errors.length > 0) console.log(`Errors:\n${errors.join("\n")}\n`);
  const otherStderr = stderrLines.filter((line) => !warningPattern.test(line) && !line.includes("--trace-warnings"));
  if (otherStderr.length > 0) console.log(`Other output on stderr:\n${otherStderr.slice(0, 40).join("\n")}\n`);

  mkdirSync(args.out, { recursive: true });
  const report = { ...env, smoke: args.smoke, all: args.all, durationSec, sizes, rows, newCosts, warnings: warningList, errors, results };
  const write = (name, text) => {
    const path = join(args.out, name);
    writeFileSync(`${path}.tmp`, text);
    renameSync(`${path}.tmp`, path);
    return path;
  };
  write("latest.json", `${JSON.stringify(report, null, 2)}\n`);
  const md = write("latest.md", markdownReport({ env, rows, newCosts, warnings: warningList, sizes, durationSec, errors }));
  console.log(`Wrote ${md} and latest.json (${durationSec.toFixed(0)} s).`);
  process.exitCode = errors.length > 0 ? 1 : 0;
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
