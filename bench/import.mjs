#!/usr/bin/env node
import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

/*
 * Cold `import("jianmu")`: what an app pays on start-up before it runs anything.
 *
 *   node bench/import.mjs [--reps N] [--json FILE] [--baseline DIR]
 *
 * Each repetition starts fresh Node processes (`--expose-gc`), interleaved so a busy machine slows
 * them all alike, one per subject:
 *   - empty:  no import at all (the process's own heap: the zero of the heap figures);
 *   - peers:  xstate + zod + openai together, the packages an app using jianmu installs with it;
 *   - floor:  xstate + zod, what jianmu's own modules import on load (openai loads on the first
 *             model call): no change to jianmu can take `import("jianmu")` below this;
 *   - jianmu: `import("jianmu")`, the compiled library (dist/, `npm run build`) as an app sees it;
 *   - aisdk:  the Vercel AI SDK as an app using it imports it: `ai`, `@ai-sdk/openai` and zod (for
 *             its tools' schemas).
 * Two figures per process, reported as medians over the repetitions:
 *   - import ms: `performance.now()` around the `await import(...)` alone (the process's own
 *     start, the same for every subject, is excluded); also the CPU time the process spent in it
 *     (all threads), which a machine busy with other work disturbs less than the wall time;
 *   - heap delta: `heapUsed` after the import and two full GCs, minus the median `heapUsed` of the
 *     empty process measured the same way in the same run. So it is the heap the imported code
 *     keeps (compiled functions, module records, objects built at load), not the runtime's own.
 * Targets from issue 19: ≤ 150 ms and ≤ 6 MB; the AI SDK is measured in the same rounds.
 * `measureImport()` returns the same figures for another report to show. With `--baseline DIR`
 * (a checkout of another commit, built, with node_modules), its dist/index.js is measured too, in the
 * same rounds: what a change bought, on the same machine at the same moment.
 */

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = dirname(HERE);
const MB = 1024 * 1024;

export const IMPORT_TARGETS = { ms: 150, heapBytes: 6 * MB };

const SUBJECTS = {
  empty: [],
  peers: ["xstate", "zod", "openai"],
  floor: ["xstate", "zod"],
  jianmu: ["jianmu"],
  aisdk: ["ai", "@ai-sdk/openai", "zod"],
};

/** The child's program: import the specifiers, then report import ms and heapUsed after GC. */
function childScript(specifiers) {
  const imports = specifiers.map((s) => `import(${JSON.stringify(s)})`).join(", ");
  return [
    "const t = performance.now();",
    "const c = process.cpuUsage();",
    `await Promise.all([${imports}]);`,
    "const ms = performance.now() - t;",
    "const cpu = process.cpuUsage(c);",
    "globalThis.gc(); globalThis.gc();",
    "process.stdout.write(JSON.stringify({ ms, cpuMs: (cpu.user + cpu.system) / 1000, heapUsed: process.memoryUsage().heapUsed }));",
  ].join("\n");
}

function measureOnce(specifiers) {
  const result = spawnSync(process.execPath, ["--expose-gc", "--input-type=module", "-e", childScript(specifiers)], { cwd: ROOT, encoding: "utf8" });
  if (result.status !== 0) throw new Error(`importing ${specifiers.join(" + ") || "nothing"} failed: ${result.stderr.trim().split("\n").slice(-3).join(" / ")}`);
  return JSON.parse(result.stdout);
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/**
 * Medians over `reps` rounds of fresh processes. Returns, per subject, `ms` (the import) and
 * `heapBytes` (heap after import and GC minus the empty process's), plus the targets and whether
 * jianmu meets each.
 */
export async function measureImport({ reps = 15, baseline } = {}) {
  const subjectsToRun = { ...SUBJECTS };
  if (baseline) subjectsToRun.baseline = [pathToFileURL(join(baseline, "dist", "index.js")).href];
  const names = Object.keys(subjectsToRun);
  const samples = Object.fromEntries(names.map((name) => [name, []]));
  for (let i = 0; i < reps; i++) {
    // Rotate the order each round, so no subject always runs first after a pause.
    for (let k = 0; k < names.length; k++) {
      const name = names[(i + k) % names.length];
      samples[name].push(measureOnce(subjectsToRun[name]));
    }
  }
  const emptyHeap = median(samples.empty.map((s) => s.heapUsed));
  const subjects = Object.fromEntries(
    names.map((name) => [
      name,
      {
        imports: subjectsToRun[name],
        ms: median(samples[name].map((s) => s.ms)),
        cpuMs: median(samples[name].map((s) => s.cpuMs)),
        heapBytes: median(samples[name].map((s) => s.heapUsed)) - emptyHeap,
        heapUsed: median(samples[name].map((s) => s.heapUsed)),
      },
    ]),
  );
  const jianmu = subjects.jianmu;
  return {
    reps,
    node: process.versions.node,
    emptyHeapUsed: emptyHeap,
    subjects,
    targets: IMPORT_TARGETS,
    pass: { ms: jianmu.ms <= IMPORT_TARGETS.ms, heap: jianmu.heapBytes <= IMPORT_TARGETS.heapBytes },
  };
}

const fmtMs = (v) => `${v.toFixed(0)} ms`;
const fmtMb = (v) => `${(v / MB).toFixed(1)} MB`;

/** The result as a markdown table. */
export function importTable(result) {
  const { subjects, targets, pass } = result;
  const line = (label, s) => `| ${label} | ${fmtMs(s.ms)} | ${fmtMs(s.cpuMs)} | ${fmtMb(s.heapBytes)} |`;
  return [
    `Cold import, median of ${result.reps} fresh Node ${result.node} processes each (interleaved); heap = heapUsed after import and GC minus an empty process's (${fmtMb(result.emptyHeapUsed)}).`,
    "",
    "| import | time | CPU | heap |",
    "| --- | ---: | ---: | ---: |",
    line("the peers (xstate + zod + openai)", subjects.peers),
    line("what jianmu imports on load (xstate + zod)", subjects.floor),
    ...(subjects.baseline ? [line("`import(\"jianmu\")`, the baseline build", subjects.baseline)] : []),
    line('`import("jianmu")`', subjects.jianmu),
    `| target (jianmu) | ≤ ${targets.ms} ms ${pass.ms ? "PASS" : "FAIL"} | — | ≤ ${fmtMb(targets.heapBytes)} ${pass.heap ? "PASS" : "FAIL"} |`,
    line("the Vercel AI SDK (ai + @ai-sdk/openai + zod)", subjects.aisdk),
  ].join("\n");
}

function parseArgs(argv) {
  const args = { reps: 15, json: undefined, baseline: undefined };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--reps") args.reps = Number(argv[++i]);
    else if (arg === "--json") args.json = resolve(argv[++i] ?? "");
    else if (arg === "--baseline") args.baseline = resolve(argv[++i] ?? "");
    else throw new Error(`unknown argument ${arg}; use --reps N, --json FILE, --baseline DIR`);
    if (!Number.isInteger(args.reps) || args.reps < 1) throw new Error("--reps needs a whole number ≥ 1");
  }
  return args;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = parseArgs(process.argv.slice(2));
  const result = await measureImport({ reps: args.reps, baseline: args.baseline });
  console.log(importTable(result));
  if (args.json) {
    mkdirSync(dirname(args.json), { recursive: true });
    writeFileSync(args.json, `${JSON.stringify({ date: new Date().toISOString(), ...result }, null, 2)}\n`);
  }
}
