import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import os from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { median } from "./measure.mjs";
import { newCostsTable } from "./new-costs.mjs";

/*
 * Turns the scenarios' numbers into the table: one row per measure, with the floor's figure,
 * jianmu's and the Vercel AI SDK's, each library's ratio to the floor (all measured in the same
 * run), issue 19's target and the result: PASS/FAIL against the target, then ahead/behind the AI
 * SDK. Under the latency and throughput rows, two info rows split jianmu's ratio with the reference
 * contender `chart` (jianmu's statechart in bare XState): chart / floor, the interpreter's share,
 * and jianmu / chart, jianmu's own.
 */

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");

/**
 * Heap retained per finished run may exceed the floor's by this much and still count as "no more
 * than the floor's". The figure is a least-squares slope of the settled heap over ~1800 runs; the
 * settled heap itself jitters by ±20 KB from batch to batch, which moves the slope of one
 * contender by about ±13 B/run from repetition to repetition (22-36 B/run for both floor and jianmu
 * in the runs before issue 19). 32 B is about twice that jitter, and less than anything a finished
 * run could leave behind through a leak (one retained closure with its context, a listener, an
 * entry in a map holding the run's id: each more than that, a whole run's state kilobytes).
 */
export const RETAINED_NOISE_BYTES = 32;

/** Issue 19's targets for cold `import("jianmu")`, absolute. */
export const IMPORT_TARGET = { ms: 150, heapMB: 6 };

/** Issue 35's first-token targets: what jianmu may add to the SDK's own stream yielding the first delta. */
export const FIRST_TOKEN_TARGET = { p50Ms: 1, p99Ms: 3 };

const ms = (v) => `${v.toFixed(2)} ms`;
const kb = (v) => `${(v / 1024).toFixed(1)} KB`;
const bytes = (v) => `${Math.round(v)} B`;
const us = (v) => `${v.toFixed(0)} µs`;
const rate = (v) => `${v.toFixed(1)} runs/s`;
const mb = (v) => `${v.toFixed(1)} MB`;
const times = (v) => `${v.toFixed(2)}×`;
const plusMs = (v) => `${v >= 0 ? "+" : "−"}${Math.abs(v).toFixed(2)} ms`;

/** How the table names the reference contender, and the AI SDK. */
export const CHART_LABEL = "bare XState chart";
export const AI_SDK_LABEL = "Vercel AI SDK";

/**
 * Ratios are judged as the table prints them, to two decimals (the targets have two, and runs
 * differ by more than that): a printed 1.40× meets "≤ 1.4×", and two equal printed ratios are level.
 */
const shown = (ratio) => Math.round(ratio * 100) / 100;
const atMost = (limit) => ({ text: `≤ ${limit}×`, pass: (r) => shown(r.ratio) <= limit });
const atLeast = (limit) => ({ text: `≥ ${limit}×`, pass: (r) => shown(r.ratio) >= limit });

/** "ahead" when jianmu's figure beats the AI SDK's, "level" when they print alike, "behind" otherwise. */
function versus(jianmu, aisdk, higherIsBetter) {
  if (jianmu === aisdk) return "level";
  return higherIsBetter === jianmu > aisdk ? "ahead" : "behind";
}

/**
 * A row: the three figures, each library's comparison with the floor (a ratio, or with `difference`
 * the difference in ms), the target's verdict and, where the AI SDK has a figure, ahead/behind it.
 */
function row(measure, figures, format, { target, higherIsBetter = false, difference = false, levelWithin } = {}) {
  const { floor, jianmu, aisdk } = figures;
  const compare = (v) => (difference ? v - floor : v / floor);
  const compareText = (v) => (difference ? plusMs(v - floor) : times(v / floor));
  const r = { measure, floor, jianmu, ratio: compare(jianmu), floorText: format(floor), jianmuText: format(jianmu), ratioText: compareText(jianmu) };
  if (typeof aisdk === "number") Object.assign(r, { aisdk, aisdkRatio: compare(aisdk), aisdkText: format(aisdk), aisdkRatioText: compareText(aisdk) });
  else Object.assign(r, { aisdkText: "—", aisdkRatioText: "—" });
  return judged(r, target, higherIsBetter, difference ? (v) => Math.round(v * 100) / 100 : shown, levelWithin);
}

/** `levelWithin`: the two figures themselves (not their ratios to the floor) are level when they differ by no more than this, the measure's noise. */
function judged(r, target, higherIsBetter, printed = shown, levelWithin = undefined) {
  const result = target ? (target.pass(r) ? "PASS" : "FAIL") : "info";
  const compared =
    levelWithin === undefined ? () => versus(printed(r.ratio), printed(r.aisdkRatio), higherIsBetter) : () => (Math.abs(r.jianmu - r.aisdk) <= levelWithin ? "level" : versus(r.jianmu, r.aisdk, higherIsBetter));
  const versusAiSdk = typeof r.aisdk === "number" ? compared() : undefined;
  const resultText = versusAiSdk ? `${result}, ${versusAiSdk}` : result;
  return { ...r, targetText: target ? target.text : "—", result, versusAiSdk, resultText };
}

/**
 * The smallest number of wins out of `n` paired repetitions that a fair coin reaches with a chance of
 * at most 5% (the one-sided sign test): fewer than that, and jianmu winning more often than not is
 * what noise alone does often enough.
 */
export function winsNeeded(n) {
  // In logarithms: 2 ** n and the binomial coefficients overflow a double past n = 1000.
  const logOutcomes = n * Math.LN2;
  let tail = 0;
  let logChoose = 0;
  // Tail P(X >= k) for k from n down, until adding the next k would exceed 5%.
  for (let k = n; k >= 0; k--) {
    if (k < n) logChoose += Math.log(k + 1) - Math.log(n - k);
    const chance = Math.exp(logChoose - logOutcomes);
    if (tail + chance > 0.05) return k + 1;
    tail += chance;
  }
  return 0;
}

/**
 * Latency and throughput against the AI SDK, repetition by repetition: each repetition measures both
 * back to back, so a moment of the host's load hits both; jianmu is ahead (behind) only when it was
 * better (worse) in enough of them that chance is ruled out (winsNeeded), and level otherwise. On a
 * shared host a median of a few repetitions moves by more than the libraries differ (throughput ratios
 * of 0.42 to 0.76 for the same build within one run), and two medians that print 0.01 apart say
 * nothing: comparing them handed out verdicts by coin toss.
 */
export function pairedVerdict(jianmuEach, aisdkEach, higherIsBetter = true) {
  const n = Math.min(jianmuEach.length, aisdkEach.length);
  let wins = 0;
  let losses = 0;
  for (let i = 0; i < n; i++) {
    const better = higherIsBetter ? jianmuEach[i] - aisdkEach[i] : aisdkEach[i] - jianmuEach[i];
    if (better > 0) wins++;
    else if (better < 0) losses++;
  }
  const needed = winsNeeded(n);
  const versusAiSdk = n > 0 && wins >= needed ? "ahead" : n > 0 && losses >= needed ? "behind" : "level";
  return { versusAiSdk, wins, n };
}

/** A timing row judged against the AI SDK by its paired repetitions, when the results kept them (every run since). */
function pairedRow(judgedRow, jianmuEach, aisdkEach, higherIsBetter) {
  if (!jianmuEach?.length || !aisdkEach?.length) return judgedRow;
  const { versusAiSdk, wins, n } = pairedVerdict(jianmuEach, aisdkEach, higherIsBetter);
  return { ...judgedRow, versusAiSdk, resultText: `${judgedRow.result}, ${versusAiSdk} (better in ${wins} of ${n} paired repetitions)` };
}

/**
 * The two rows that split a jianmu / floor row with the reference chart. The chart's figure goes
 * in the column of the side it stands in for, marked "chart".
 */
function chartRows(of, floor, chart, jianmu, format) {
  if (typeof chart !== "number") return [];
  const info = { of, aisdkText: "—", aisdkRatioText: "—", targetText: "—", result: "info", resultText: "info" };
  const interpreter = chart / floor;
  const own = jianmu / chart;
  return [
    { ...info, measure: `  ↳ ${CHART_LABEL} / floor (the interpreter's share)`, floor, chart, ratio: interpreter, floorText: format(floor), jianmuText: `chart: ${format(chart)}`, ratioText: times(interpreter) },
    { ...info, measure: `  ↳ jianmu / ${CHART_LABEL} (jianmu's own share)`, chart, jianmu, ratio: own, floorText: `chart: ${format(chart)}`, jianmuText: format(jianmu), ratioText: times(own) },
  ];
}

/** A measure whose scenario failed or is missing. */
const failedRow = (measure, error, target = "—") => ({ measure, floorText: "error", jianmuText: "error", ratioText: "—", aisdkText: "error", aisdkRatioText: "—", targetText: target, result: "FAIL", resultText: "FAIL", error });

/** Issue 19's latency targets by result key. CPU of streaming runs has none. */
const LATENCY = [
  { key: "latencyWhole", label: "non-streaming", wall: 1.4, cpu: 1.5 },
  { key: "latencyStream", label: "streaming", wall: 1.3 },
];
const THROUGHPUT = [
  { key: "throughputWhole", label: "non-streaming", target: 0.7 },
  { key: "throughputStream", label: "streaming", target: 0.75 },
];
const FIRST_TOKEN = [
  { key: "firstToken", label: "over loopback" },
  { key: "firstTokenInProcess", label: "in process" },
];

const figuresOf = (r, field) => ({ floor: r.floor[field], jianmu: r.jianmu[field], aisdk: r.aisdk?.[field] });

function timingRows(results) {
  const rows = [];
  for (const { key, label, wall, cpu } of LATENCY) {
    const r = results[key];
    const measure = (what) => `Latency, one K=10 P=1 run, ${label}: ${what}`;
    if (!r?.floor) {
      rows.push(failedRow(measure("wall time"), key, `≤ ${wall}×`));
      continue;
    }
    rows.push(pairedRow(row(measure("wall time"), figuresOf(r, "wallMs"), ms, { target: atMost(wall) }), r.jianmu.wallMsEach, r.aisdk?.wallMsEach, false));
    rows.push(...chartRows(measure("wall time"), r.floor.wallMs, r.chart?.wallMs, r.jianmu.wallMs, ms));
    rows.push(pairedRow(row(measure("client CPU time"), figuresOf(r, "cpuMs"), ms, { target: cpu && atMost(cpu) }), r.jianmu.cpuMsEach, r.aisdk?.cpuMsEach, false));
    rows.push(...chartRows(measure("client CPU time"), r.floor.cpuMs, r.chart?.cpuMs, r.jianmu.cpuMs, ms));
  }
  for (const { key, label, target } of THROUGHPUT) {
    const t = results[key];
    if (!t?.floor) {
      rows.push(failedRow(`Throughput, 100 concurrent K=10 P=1 runs (${label})`, key, `≥ ${target}×`));
      continue;
    }
    const measure = `Throughput, ${t.concurrency} concurrent K=10 P=1 runs (${label})`;
    rows.push(pairedRow(row(measure, figuresOf(t, "runsPerSecond"), rate, { target: atLeast(target), higherIsBetter: true }), t.jianmu.rates, t.aisdk?.rates, true));
    rows.push(...chartRows(measure, t.floor.runsPerSecond, t.chart?.runsPerSecond, t.jianmu.runsPerSecond, rate));
  }
  for (const { key, label } of FIRST_TOKEN) {
    const f = results[key];
    const measure = (what) => `First token ${label}, ${what}: from its bytes' arrival to the listener`;
    const limit = (max) => ({ text: `≤ floor + ${max} ms`, pass: (r) => Math.round((r.jianmu - r.floor) * 100) / 100 <= max });
    if (!f?.floor) {
      rows.push(failedRow(measure("p50"), key, `≤ floor + ${FIRST_TOKEN_TARGET.p50Ms} ms`));
      continue;
    }
    rows.push(row(measure("p50"), figuresOf(f, "p50Ms"), ms, { target: limit(FIRST_TOKEN_TARGET.p50Ms), difference: true }));
    rows.push(row(measure("p99"), figuresOf(f, "p99Ms"), ms, { target: limit(FIRST_TOKEN_TARGET.p99Ms), difference: true }));
  }
  return rows;
}

function memoryRows(results) {
  const rows = [];
  const medianOf = (runs, field) => (runs?.length ? median(runs.map((m) => m[field])) : undefined);
  const memory = results.memory;
  if (memory?.floor?.length && memory?.jianmu?.length) {
    const figures = (field) => ({ floor: medianOf(memory.floor, field), jianmu: medianOf(memory.jianmu, field), aisdk: medianOf(memory.aisdk, field) });
    const agents = memory.floor[0].agents;
    // Each repetition is a process of its own, and a few of them land far apart (the heap left after
    // the held runs moved from 5.7 to 15.0 KB per run for one library in one run): as for retention,
    // two medians closer than either library's own repetitions are level.
    const spread = (field) => ({ levelWithin: ownSpread(memory, field) });
    rows.push(row(`Heap per in-flight agent, ${agents} held mid-run (after GC)`, figures("heapPerAgent"), kb, { target: atMost(1.4), ...spread("heapPerAgent") }));
    rows.push(row(`RSS per in-flight agent, ${agents} held mid-run`, figures("rssPerAgent"), kb, spread("rssPerAgent")));
    const after = row(`Heap left after the ${agents} held runs finished, per run (idle pooled connections closed first)`, figures("heapAfterHeldPerRun"), bytes, spread("heapAfterHeldPerRun"));
    rows.push({ ...after, ratioText: "—", aisdkRatioText: "—" });
  } else rows.push(failedRow("Heap per in-flight agent", "memory", "≤ 1.4×"));

  const retention = results.retention;
  const retainedTarget = `≤ floor + ${RETAINED_NOISE_BYTES} B/run`;
  if (retention?.floor?.length && retention?.jianmu?.length) {
    const figures = { floor: medianOf(retention.floor, "retainedPerRun"), jianmu: medianOf(retention.jianmu, "retainedPerRun"), aisdk: medianOf(retention.aisdk, "retainedPerRun") };
    // A ratio of two noise figures around zero says nothing: the difference is what the target reads, and what is compared
    // (two libraries whose slopes differ by less than the slope's own jitter are level: 32 B, or more when this run's
    // repetitions of jianmu or the AI SDK spread wider than that).
    const retained = row(`Heap retained per finished run (slope over ${retention.floor[0].runs} runs, after GC, JIT tiers off)`, figures, bytes, {
      target: { text: retainedTarget, pass: (r) => r.jianmu <= r.floor + RETAINED_NOISE_BYTES },
      levelWithin: Math.max(RETAINED_NOISE_BYTES, ownSpread(retention, "retainedPerRun")),
    });
    const diff = (v) => `${v - figures.floor >= 0 ? "+" : ""}${Math.round(v - figures.floor)} B`;
    rows.push({ ...retained, ratioText: diff(figures.jianmu), aisdkRatioText: typeof figures.aisdk === "number" ? diff(figures.aisdk) : "—" });
  } else rows.push(failedRow("Heap retained per finished run", "retention", retainedTarget));
  return rows;
}

/** The wider of jianmu's and the AI SDK's spreads of a figure in this run: below it, two medians are level. */
function ownSpread(results, field) {
  return Math.max(spreadOf(results.jianmu, field), spreadOf(results.aisdk ?? [], field));
}

/** How far apart one contender's repetitions of a figure landed (0 with fewer than two). */
function spreadOf(reps, field) {
  const values = reps.map((rep) => rep[field]).filter((value) => typeof value === "number");
  return values.length < 2 ? 0 : Math.max(...values) - Math.min(...values);
}

function importRows(results) {
  const imp = results.coldImport;
  if (!imp?.jianmu) {
    return [failedRow('Cold import("jianmu"): time', "coldImport", `≤ ${IMPORT_TARGET.ms} ms`), failedRow('Cold import("jianmu"): heap', "coldImport", `≤ ${IMPORT_TARGET.heapMB} MB`)];
  }
  // The floor column holds the required peers (xstate + zod + openai), which any app using jianmu loads
  // anyway; the AI SDK's figure is its own packages and zod. Absolute figures are compared.
  const absolute = (measure, field, format, limit, unit) => {
    const r = {
      measure,
      floor: imp.peers[field],
      jianmu: imp.jianmu[field],
      floorText: `peers: ${format(imp.peers[field])}`,
      jianmuText: format(imp.jianmu[field]),
      ratioText: `${(imp.jianmu[field] / imp.peers[field]).toFixed(2)}× peers`,
      ...(imp.aisdk ? { aisdk: imp.aisdk[field], aisdkText: format(imp.aisdk[field]), aisdkRatioText: `${(imp.aisdk[field] / imp.peers[field]).toFixed(2)}× peers` } : { aisdkText: "—", aisdkRatioText: "—" }),
    };
    // Judged on the absolute figures (the targets are absolute), then each ratio to the peers kept.
    const judgedRow = judged({ ...r, ratio: r.jianmu, aisdkRatio: r.aisdk }, { text: `≤ ${limit}${unit}`, pass: (x) => x.jianmu <= limit }, false, (v) => Math.round(v * 10) / 10);
    return { ...judgedRow, ratio: r.jianmu / r.floor, ...(imp.aisdk ? { aisdkRatio: r.aisdk / r.floor } : {}) };
  };
  // jianmu loads xstate and zod on import (openai on the first model call): its own share is what it adds to those two.
  const own = (format, a, b, unit) => {
    const measure = "  ↳ jianmu's own share (jianmu − what it imports: xstate + zod)";
    return { measure, of: measure, floorText: `xstate + zod: ${format(a)}`, jianmuText: `${b - a >= 0 ? "+" : "−"}${format(Math.abs(b - a))}`, ratioText: "—", aisdkText: "—", aisdkRatioText: "—", targetText: "—", result: "info", resultText: "info", ownShare: b - a, unit };
  };
  const base = imp.base ?? imp.peers;
  return [
    absolute(`Cold import("jianmu"), fresh process: time (median of ${imp.reps})`, "ms", ms, IMPORT_TARGET.ms, " ms"),
    own(ms, base.ms, imp.jianmu.ms, "ms"),
    absolute('Cold import("jianmu"), fresh process: heap after import + GC, over an empty process', "heapMB", mb, IMPORT_TARGET.heapMB, " MB"),
    own(mb, base.heapMB, imp.jianmu.heapMB, "MB"),
  ];
}

function otherRows(results, warnings) {
  const rows = [];
  const p = results.parallelTools;
  if (p?.floor) {
    const span = row(`K=1 P=${p.parallel}, tools sleeping ${p.sleepMs} ms: batch span (one tool: ${ms(p.jianmu.oneToolMs)})`, figuresOf(p, "spanMs"), ms, {
      target: { text: "≤ 1.1× one tool", pass: (r) => r.jianmu <= 1.1 * p.jianmu.oneToolMs },
    });
    rows.push({ ...span, ratioText: `${times(span.ratio)} (${(p.jianmu.spanMs / p.jianmu.oneToolMs).toFixed(2)}× one tool)` });
    rows.push(row(`K=1 P=${p.parallel}, tools sleeping ${p.sleepMs} ms: run wall time`, figuresOf(p, "wallMs"), ms));
  } else rows.push(failedRow("K=1 P=8 parallel tools", "parallelTools"));

  const s = results.persistence;
  if (s?.floor) {
    rows.push(row(`Persist + restore, ${s.historySize}-message history (floor: JSON round trip of the messages; the AI SDK keeps no run state)`, figuresOf(s, "roundTripUs"), us));
    rows.push(row(`  of which persist (${kb(s.floor.bytes)} vs ${kb(s.jianmu.bytes)} of JSON)`, figuresOf(s, "persistUs"), us));
    rows.push(row("  of which restore (validate + createActor)", figuresOf(s, "restoreUs"), us));
  } else rows.push(failedRow("Persist + restore", "persistence"));

  const warned = warnings.length === 0 ? "PASS" : "FAIL";
  rows.push({ measure: "Warnings printed (any process)", floorText: "", jianmuText: String(warnings.length), ratioText: "—", aisdkText: "", aisdkRatioText: "—", targetText: "none", result: warned, resultText: warned });
  return rows;
}

/** The table rows from the scenario results (a missing or failed scenario gives an error row). */
export function buildRows(results, warnings) {
  return [...timingRows(results), ...memoryRows(results), ...importRows(results), ...otherRows(results, warnings)];
}

export const TABLE_HEADER = `| Measure | floor (openai SDK loop) | jianmu | jianmu / floor | ${AI_SDK_LABEL} | AI SDK / floor | target | result (target, then jianmu against the AI SDK) |`;

export function markdownTable(rows) {
  const lines = [TABLE_HEADER, "| --- | ---: | ---: | ---: | ---: | ---: | :---: | :---: |"];
  for (const r of rows) lines.push(`| ${r.measure} | ${r.floorText} | ${r.jianmuText} | ${r.ratioText} | ${r.aisdkText} | ${r.aisdkRatioText} | ${r.targetText} | ${r.resultText} |`);
  return lines.join("\n");
}

function versionOf(name) {
  try {
    return JSON.parse(readFileSync(join(ROOT, "node_modules", name, "package.json"), "utf8")).version;
  } catch {
    return "unknown";
  }
}

function git(...args) {
  try {
    return execFileSync("git", args, { cwd: ROOT, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  } catch {
    return undefined;
  }
}

/** Where and with what the numbers were measured. */
export function environment() {
  const cpus = os.cpus();
  const commit = git("rev-parse", "--short", "HEAD");
  const dirty = git("status", "--porcelain", "--untracked-files=no");
  return {
    date: new Date().toISOString(),
    machine: {
      cpu: cpus[0]?.model ?? "unknown",
      cores: cpus.length,
      memoryGiB: Math.round(os.totalmem() / 2 ** 30),
      os: `${os.type()} ${os.release()} ${os.arch()}`,
      loadAverage: os.loadavg().map((v) => Number(v.toFixed(2))),
    },
    versions: {
      node: process.versions.node,
      jianmu: JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).version,
      openai: versionOf("openai"),
      xstate: versionOf("xstate"),
      zod: versionOf("zod"),
      ai: versionOf("ai"),
      "@ai-sdk/openai": versionOf("@ai-sdk/openai"),
    },
    commit: commit === undefined ? "unknown" : `${commit}${dirty ? " (with uncommitted changes)" : ""}`,
  };
}

export function markdownReport({ env, rows, newCosts = [], warnings, sizes, durationSec, errors }) {
  const lines = [
    "# jianmu benchmark: overhead against a raw `openai` SDK loop, beside the Vercel AI SDK",
    "",
    `- Date: ${env.date}`,
    `- Machine: ${env.machine.cpu}, ${env.machine.cores} cores, ${env.machine.memoryGiB} GiB, ${env.machine.os} (load average at the end: ${env.machine.loadAverage.join(", ")})`,
    `- Versions: node ${env.versions.node}, jianmu ${env.versions.jianmu} (${env.commit}), openai ${env.versions.openai}, xstate ${env.versions.xstate}, zod ${env.versions.zod}, ai ${env.versions.ai}, @ai-sdk/openai ${env.versions["@ai-sdk/openai"]}`,
    `- Took ${durationSec.toFixed(0)} s. Sizes: ${JSON.stringify(sizes)}`,
    "",
    "The scripted OpenAI-compatible server runs on 127.0.0.1 in its own process and answers at once; the",
    "contenders run in other processes, alternating repetition by repetition. Figures are medians; each",
    "ratio is jianmu / floor from the same run (for throughput, higher is better). The ↳ rows bring in a",
    `reference, the "${CHART_LABEL}": jianmu's statechart rebuilt in plain XState around the floor's SDK`,
    "call and tools, with no jianmu code. chart / floor is what the interpreter costs for that chart shape,",
    "jianmu / chart what jianmu's own code adds on top; the two multiply to jianmu / floor.",
    "",
    "The Vercel AI SDK (`ai` + `@ai-sdk/openai`, `generateText` / `streamText` with the same prompt, tools and",
    "retry policy) runs in the same processes, taking turns with the others: its figures and ratios are",
    "measured here, in this run. Targets are issue 19's (issue 35's for the first token). The result is",
    "PASS/FAIL against the target, then jianmu ahead/behind the AI SDK (ratios compared as printed, to two",
    "decimals). First token: a streamed answer whose first delta comes at once, then a pause; how long after its",
    "bytes reached the client's JavaScript it reached each library's listener (the floor's: the SDK's own stream",
    "yielding it), over loopback and answered from memory in process; the ratio columns hold the difference to",
    "the floor. Cold",
    "import is measured in fresh processes (bench/import.mjs): its floor column is the required peers alone",
    "(xstate + zod + openai), and its targets are absolute, so unlike the ratios they move with the machine's load.",
    "",
    markdownTable(rows),
    "",
    "## New costs (issue 19: measured as they arrive, no target yet)",
    "",
    "From their own scripts (bench/README.md); `npm run bench:all` runs them with the table above, plain",
    "`npm run bench` shows the results last written to this folder, with their date.",
    "",
    newCostsTable(newCosts),
    "",
  ];
  if (warnings.length > 0) lines.push("## Warnings", "", ...warnings.map((w) => `- ${w}`), "");
  if (errors.length > 0) lines.push("## Errors", "", ...errors.map((e) => "```\n" + e + "\n```"), "");
  return lines.join("\n");
}
