import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import os from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { median } from "./measure.mjs";

/*
 * Turns the scenarios' numbers into the table: one row per measure, the floor's figure, jianmu's,
 * their ratio (measured in the same run) and the verdict against the target from issue 9. Under
 * the latency and throughput rows, two info rows split that ratio with the reference contender
 * `chart` (jianmu's statechart in bare XState): chart / floor, the interpreter's share, and
 * jianmu / chart, jianmu's own.
 */

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");

/** A retained heap this small per finished run is GC noise, not a leak (a leaked run keeps kilobytes). */
export const RETAINED_LIMIT_BYTES = 256;

const ms = (v) => `${v.toFixed(2)} ms`;
const kb = (v) => `${(v / 1024).toFixed(1)} KB`;
const bytes = (v) => `${Math.round(v)} B`;
const us = (v) => `${v.toFixed(0)} µs`;
const rate = (v) => `${v.toFixed(1)} runs/s`;

function row(measure, floor, jianmu, format, target) {
  const ratio = jianmu / floor;
  const r = { measure, floor, jianmu, ratio, floorText: format(floor), jianmuText: format(jianmu), ratioText: `${ratio.toFixed(2)}×` };
  if (!target) return { ...r, targetText: "—", result: "info" };
  return { ...r, targetText: target.text, result: target.pass(r) ? "PASS" : "FAIL" };
}

/** How the table names the reference contender. */
export const CHART_LABEL = "bare XState chart";

/**
 * The two rows that split a jianmu / floor row with the reference chart. The chart's figure goes
 * in the column of the side it stands in for, marked "chart".
 */
function chartRows(of, floor, chart, jianmu, format) {
  if (typeof chart !== "number") return [];
  const info = { of, targetText: "—", result: "info" };
  const interpreter = chart / floor;
  const own = jianmu / chart;
  return [
    { ...info, measure: `  ↳ ${CHART_LABEL} / floor (the interpreter's share)`, floor, chart, ratio: interpreter, floorText: format(floor), jianmuText: `chart: ${format(chart)}`, ratioText: `${interpreter.toFixed(2)}×` },
    { ...info, measure: `  ↳ jianmu / ${CHART_LABEL} (jianmu's own share)`, chart, jianmu, ratio: own, floorText: `chart: ${format(chart)}`, jianmuText: format(jianmu), ratioText: `${own.toFixed(2)}×` },
  ];
}

const atMost = (limit) => ({ text: `≤ ${limit}×`, pass: (r) => r.ratio <= limit });
const atLeast = (limit) => ({ text: `≥ ${limit}×`, pass: (r) => r.ratio >= limit });

/** The table rows from the scenario results (a missing or failed scenario gives an error row). */
export function buildRows(results, warnings) {
  const rows = [];
  const failed = (measure, name) => rows.push({ measure, floorText: "error", jianmuText: "error", ratioText: "—", targetText: "—", result: "FAIL", error: name });
  for (const [key, label, target] of [
    ["latencyWhole", "non-streaming", 1.15],
    ["latencyStream", "streaming", 1.3],
  ]) {
    const r = results[key];
    if (!r?.floor) {
      failed(`Latency, one K=10 P=1 run, ${label}`, key);
      continue;
    }
    const wall = `Latency, one K=10 P=1 run, ${label}: wall time`;
    rows.push(row(wall, r.floor.wallMs, r.jianmu.wallMs, ms, atMost(target)));
    rows.push(...chartRows(wall, r.floor.wallMs, r.chart?.wallMs, r.jianmu.wallMs, ms));
    const cpu = `Latency, one K=10 P=1 run, ${label}: client CPU time`;
    rows.push(row(cpu, r.floor.cpuMs, r.jianmu.cpuMs, ms));
    rows.push(...chartRows(cpu, r.floor.cpuMs, r.chart?.cpuMs, r.jianmu.cpuMs, ms));
  }
  const t = results.throughput;
  if (t?.floor) {
    const measure = `Throughput, ${t.concurrency} concurrent K=10 P=1 runs (${t.stream ? "streaming" : "non-streaming"})`;
    rows.push(row(measure, t.floor.runsPerSecond, t.jianmu.runsPerSecond, rate, atLeast(0.85)));
    rows.push(...chartRows(measure, t.floor.runsPerSecond, t.chart?.runsPerSecond, t.jianmu.runsPerSecond, rate));
  } else failed("Throughput, 100 concurrent runs", "throughput");

  const memory = results.memory;
  if (memory?.floor?.length && memory?.jianmu?.length) {
    const med = (name, field) => median(memory[name].map((m) => m[field]));
    const agents = memory.floor[0].agents;
    rows.push(row(`Heap per in-flight agent, ${agents} held mid-run (after GC)`, med("floor", "heapPerAgent"), med("jianmu", "heapPerAgent"), kb, atMost(1.5)));
    rows.push(row(`RSS per in-flight agent, ${agents} held mid-run`, med("floor", "rssPerAgent"), med("jianmu", "rssPerAgent"), kb));
    rows.push({ ...row(`Heap left after the ${agents} held runs finished, per run (their idle pooled connections included)`, med("floor", "heapAfterHeldPerRun"), med("jianmu", "heapAfterHeldPerRun"), bytes), ratioText: "—" });
  } else failed("Memory per in-flight agent", "memory");

  const retention = results.retention;
  if (retention?.floor?.length && retention?.jianmu?.length) {
    const med = (name) => median(retention[name].map((m) => m.retainedPerRun));
    const retained = row(`Heap retained per finished run (slope over ${retention.floor[0].runs} runs, after GC, JIT tiers off)`, med("floor"), med("jianmu"), bytes, {
      text: `≤ ${RETAINED_LIMIT_BYTES} B/run`,
      pass: (r) => r.jianmu <= RETAINED_LIMIT_BYTES,
    });
    // A ratio of two noise figures around zero says nothing.
    rows.push({ ...retained, ratioText: "—" });
  } else failed("Heap retained per finished run", "retention");

  const p = results.parallelTools;
  if (p?.floor) {
    const span = row(`K=1 P=${p.parallel}, tools sleeping ${p.sleepMs} ms: batch span (one tool: ${ms(p.jianmu.oneToolMs)})`, p.floor.spanMs, p.jianmu.spanMs, ms, {
      text: "≤ 1.1× one tool",
      pass: (r) => r.jianmu <= 1.1 * p.jianmu.oneToolMs,
    });
    rows.push({ ...span, ratioText: `${span.ratio.toFixed(2)}× (${(p.jianmu.spanMs / p.jianmu.oneToolMs).toFixed(2)}× one tool)` });
    rows.push(row(`K=1 P=${p.parallel}, tools sleeping ${p.sleepMs} ms: run wall time`, p.floor.wallMs, p.jianmu.wallMs, ms));
  } else failed("K=1 P=8 parallel tools", "parallelTools");

  const s = results.persistence;
  if (s?.floor) {
    rows.push(row(`Persist + restore, ${s.historySize}-message history (floor: JSON round trip of the messages)`, s.floor.roundTripUs, s.jianmu.roundTripUs, us));
    rows.push(row(`  of which persist (${kb(s.floor.bytes)} vs ${kb(s.jianmu.bytes)} of JSON)`, s.floor.persistUs, s.jianmu.persistUs, us));
    rows.push(row("  of which restore (validate + createActor)", s.floor.restoreUs, s.jianmu.restoreUs, us));
  } else failed("Persist + restore", "persistence");

  rows.push({
    measure: "Warnings printed (any process)",
    floorText: "",
    jianmuText: String(warnings.length),
    ratioText: "—",
    targetText: "none",
    result: warnings.length === 0 ? "PASS" : "FAIL",
  });
  return rows;
}

export function markdownTable(rows) {
  const lines = ["| Measure | floor (openai SDK loop) | jianmu | ratio | target | result |", "| --- | ---: | ---: | ---: | :---: | :---: |"];
  for (const r of rows) lines.push(`| ${r.measure} | ${r.floorText} | ${r.jianmuText} | ${r.ratioText} | ${r.targetText} | ${r.result} |`);
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
    },
    commit: commit === undefined ? "unknown" : `${commit}${dirty ? " (with uncommitted changes)" : ""}`,
  };
}

export function markdownReport({ env, rows, warnings, sizes, durationSec, errors }) {
  const lines = [
    "# jianmu benchmark: overhead against a raw `openai` SDK loop",
    "",
    `- Date: ${env.date}`,
    `- Machine: ${env.machine.cpu}, ${env.machine.cores} cores, ${env.machine.memoryGiB} GiB, ${env.machine.os} (load average at the end: ${env.machine.loadAverage.join(", ")})`,
    `- Versions: node ${env.versions.node}, jianmu ${env.versions.jianmu} (${env.commit}), openai ${env.versions.openai}, xstate ${env.versions.xstate}, zod ${env.versions.zod}`,
    `- Took ${durationSec.toFixed(0)} s. Sizes: ${JSON.stringify(sizes)}`,
    "",
    "The scripted OpenAI-compatible server runs on 127.0.0.1 in its own process and answers at once; the",
    "contenders run in other processes, alternating repetition by repetition. Figures are medians; each",
    "ratio is jianmu / floor from the same run (for throughput, higher is better). The ↳ rows bring in a",
    `reference, the "${CHART_LABEL}": jianmu's statechart rebuilt in plain XState around the floor's SDK`,
    "call and tools, with no jianmu code. chart / floor is what the interpreter costs for that chart shape,",
    "jianmu / chart what jianmu's own code adds on top; the two multiply to jianmu / floor.",
    "",
    markdownTable(rows),
    "",
  ];
  if (warnings.length > 0) lines.push("## Warnings", "", ...warnings.map((w) => `- ${w}`), "");
  if (errors.length > 0) lines.push("## Errors", "", ...errors.map((e) => "```\n" + e + "\n```"), "");
  return lines.join("\n");
}
