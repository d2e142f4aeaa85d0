import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshDatabase } from "../postgres/database.js";
import { buildDistIfMissing } from "../built-dist.js";

/*
 * Runs the benchmark harness end to end at tiny sizes (`--smoke --all`: one repetition, and the
 * new costs' scripts at their smallest, the queue on a fresh database of the tests' PostgreSQL
 * server) and checks that it produces the table with jianmu's ratio, the Vercel AI SDK's figure
 * and ratio measured in the same run, the target and ahead/behind for every measure, the new
 * costs' rows, and its result files. The numbers themselves mean nothing at these sizes and are
 * not asserted.
 */

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const out = mkdtempSync(join(tmpdir(), "jianmu-bench-smoke-"));

interface BenchRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

let run: BenchRun;
let database: Awaited<ReturnType<typeof freshDatabase>> | undefined;

beforeAll(async () => {
  // The bench imports the compiled library, as a user would (npm ci builds it through `prepare`).
  buildDistIfMissing();
  database = await freshDatabase("jianmu_bench");
  const env = { ...process.env, DATABASE_URL: database.url };
  run = await new Promise<BenchRun>((resolve) => {
    execFile(process.execPath, [join(ROOT, "bench", "run.mjs"), "--smoke", "--all", "--out", out], { cwd: ROOT, env, timeout: 280_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === "number" ? error.code : 1) : 0, stdout, stderr });
    });
  });
}, 300_000);

afterAll(async () => {
  rmSync(out, { recursive: true, force: true });
  await database?.drop();
});

interface Row {
  measure: string;
  ratioText: string;
  targetText: string;
  result: string;
  floor?: number;
  chart?: number;
  jianmu?: number;
  aisdk?: number;
  ratio?: number;
  aisdkRatio?: number;
  of?: string;
  versusAiSdk?: string;
}

interface NewCostRow {
  measure: string;
  base?: number;
  value?: number;
  source: string;
  result: string;
}

/** The measures with a target (issues 19 and 35): where the row's text starts, and its target. */
const TARGETED = [
  { measure: "Latency, one K=10 P=1 run, non-streaming: wall time", target: "≤ 1.4×" },
  { measure: "Latency, one K=10 P=1 run, non-streaming: client CPU time", target: "≤ 1.5×" },
  { measure: "Latency, one K=10 P=1 run, streaming: wall time", target: "≤ 1.3×" },
  { measure: "Throughput, 5 concurrent K=10 P=1 runs (non-streaming)", target: "≥ 0.7×" },
  { measure: "Throughput, 5 concurrent K=10 P=1 runs (streaming)", target: "≥ 0.75×" },
  { measure: "First token over loopback, p50", target: "≤ floor + 1 ms" },
  { measure: "First token over loopback, p99", target: "≤ floor + 3 ms" },
  { measure: "First token in process, p50", target: "≤ floor + 1 ms" },
  { measure: "First token in process, p99", target: "≤ floor + 3 ms" },
  { measure: "Heap per in-flight agent", target: "≤ 1.4×" },
  { measure: 'Cold import("jianmu"), fresh process: time', target: "≤ 150 ms" },
  { measure: 'Cold import("jianmu"), fresh process: heap', target: "≤ 6 MB" },
];

describe("npm run bench --smoke", () => {
  it("finishes without a harness error", () => {
    expect(run.stdout + run.stderr).not.toMatch(/^Errors:/m);
    expect(run.code, run.stdout + run.stderr).toBe(0);
  });

  it("prints the table with a ratio and a verdict for each target", () => {
    expect(run.stdout).toContain("| Measure | floor (openai SDK loop) | jianmu | jianmu / floor | Vercel AI SDK | AI SDK / floor | target | result (target, then jianmu against the AI SDK) |");
    const targetRows = run.stdout.split("\n").filter((line) => /\| (PASS|FAIL)(, (ahead|behind|level)( \(better in \d+ of \d+ paired repetitions\))?)? \|$/.test(line));
    const measures = ["Heap retained per finished run", "batch span", "Warnings printed", ...TARGETED.map((m) => m.measure)];
    for (const measure of measures) expect(targetRows.some((line) => line.includes(measure)), `a PASS/FAIL row for "${measure}"`).toBe(true);
    for (const line of targetRows.filter((l) => /Latency|Throughput|Heap per/.test(l))) {
      // jianmu's ratio, then the AI SDK's figure and ratio.
      expect(line).toMatch(/\| \d+\.\d\d× \| [\d.]+ (ms|runs\/s|KB) \| \d+\.\d\d× \|/);
    }
    for (const line of targetRows.filter((l) => l.startsWith("| First token"))) {
      expect(line).toMatch(/\| [+−]\d+\.\d\d ms \| \d+\.\d\d ms \| [+−]\d+\.\d\d ms \|/);
    }
    // The old targets (issue 9's) are gone.
    expect(run.stdout).not.toMatch(/≤ 1\.15×|≥ 0\.85×/);
  });

  it("shows the target and ahead/behind the AI SDK, measured in the same run, for every measure with a target", () => {
    const lines = run.stdout.split("\n");
    for (const { measure, target } of TARGETED) {
      const line = lines.find((l) => l.startsWith(`| ${measure}`));
      expect(line, `a row for "${measure}"`).toBeDefined();
      const cells = line!.split(" | ");
      expect(cells.at(-2), `the target of "${measure}"`).toBe(target);
      // Latency and throughput say how many paired repetitions jianmu won (the verdict's sign test).
      const paired = /^(Latency|Throughput)/.test(measure);
      expect(cells.at(-1), `the result of "${measure}"`).toMatch(paired ? /^(PASS|FAIL), (ahead|behind|level) \(better in \d+ of \d+ paired repetitions\) \|$/ : /^(PASS|FAIL), (ahead|behind|level) \|$/);
    }
    const retained = lines.find((l) => l.startsWith("| Heap retained per finished run"));
    expect(retained).toMatch(/\| [+-]\d+ B \| -?\d+ B \| [+-]\d+ B \| ≤ floor \+ \d+ B\/run \| (PASS|FAIL), (ahead|behind|level) \|$/);
  });

  it("measures the AI SDK instead of quoting anyone, and lists the new costs with their source files", () => {
    const markdown = readFileSync(join(out, "latest.md"), "utf8");
    expect(markdown).toContain("its figures and ratios are");
    expect(markdown).not.toMatch(/OpenAI Agents SDK|LangGraph|issue's harness/);
    expect(markdown).toContain("## New costs");
    const report = JSON.parse(readFileSync(join(out, "latest.json"), "utf8")) as { newCosts: NewCostRow[] };
    const expected: [string, string][] = [
      ["Checkpoint record at round", "context-checkpoint.md"],
      ["Checkpoint growth per round", "context-checkpoint.md"],
      ["Bytes SQLite writes in round", "run-log.md"],
      ["Bytes PostgreSQL writes in round", "run-log.md"],
      ["Load of the last checkpoint on SQLite", "run-log.md"],
      ["Runs/s per worker on PostgreSQL, 1 worker process", "queue.md"],
      ["Tracing, wall time per run", "tracing.json"],
      ["Tracing, CPU time per run", "tracing.json"],
    ];
    for (const [measure, source] of expected) {
      const row = report.newCosts.find((r) => r.measure.startsWith(measure));
      expect(row, `a new-cost row "${measure}"`).toBeDefined();
      expect(row!.source).toBe(source);
      expect(row!.result).toBe("info");
      expect(row!.base).toBeGreaterThan(0);
      expect(row!.value).toBeGreaterThan(0);
      expect(markdown).toContain(`| ${row!.measure} |`);
      expect(existsSync(join(out, source)), `${source} written by --all`).toBe(true);
    }
  });

  it("splits each latency and throughput row with the bare XState chart reference", () => {
    const lines = run.stdout.split("\n");
    // Each jianmu / floor row of these measures is followed by chart / floor, then jianmu / chart.
    const parents = lines.filter((line) => /^\| (Latency, .*: (wall|client CPU) time|Throughput, )/.test(line));
    expect(parents).toHaveLength(6);
    for (const parent of parents) {
      const at = lines.indexOf(parent);
      expect(lines[at + 1], `the chart / floor row under "${parent}"`).toMatch(/^\| +↳ bare XState chart \/ floor .*\| chart: [\d.]+ (ms|runs\/s) \| \d+\.\d\d× \| — \| — \| — \| info \|$/);
      expect(lines[at + 2], `the jianmu / chart row under "${parent}"`).toMatch(/^\| +↳ jianmu \/ bare XState chart .*\| chart: [\d.]+ (ms|runs\/s) \| [\d.]+ (ms|runs\/s) \| \d+\.\d\d× \| — \| — \| — \| info \|$/);
    }
  });

  it("writes the results as JSON with machine, versions and date, and as markdown", () => {
    const report = JSON.parse(readFileSync(join(out, "latest.json"), "utf8")) as {
      date: string;
      smoke: boolean;
      machine: { cpu: string; cores: number };
      versions: Record<string, string>;
      rows: Row[];
      errors: string[];
    };
    expect(report.smoke).toBe(true);
    expect(Number.isNaN(Date.parse(report.date))).toBe(false);
    expect(report.machine.cores).toBeGreaterThan(0);
    expect(Object.keys(report.versions)).toEqual(expect.arrayContaining(["node", "jianmu", "openai", "xstate", "zod", "ai", "@ai-sdk/openai"]));
    expect(report.errors).toEqual([]);
    const latency = report.rows.find((row) => row.measure.includes("non-streaming: wall time"));
    expect(latency?.floor).toBeGreaterThan(0);
    expect(latency?.jianmu).toBeGreaterThan(0);
    for (const { measure } of TARGETED) {
      const row = report.rows.find((r) => r.measure.startsWith(measure));
      expect(row?.aisdk, `the AI SDK's figure for "${measure}" in latest.json`).toBeGreaterThan(0);
      expect(row?.versusAiSdk).toMatch(/^(ahead|behind|level)$/);
      expect(row?.result).toMatch(/^(PASS|FAIL)$/);
    }
    const chartRows = report.rows.filter((row) => row.of === latency?.measure);
    expect(chartRows).toHaveLength(2);
    for (const row of chartRows) {
      expect(row.chart).toBeGreaterThan(0);
      expect(row.ratio).toBeGreaterThan(0);
      expect(row.result).toBe("info");
    }
    const markdown = readFileSync(join(out, "latest.md"), "utf8");
    expect(markdown).toContain("- Machine: ");
    expect(markdown).toContain("| Measure |");
  });

  it("prints no process warnings, even with 16 parallel tool calls on one signal", () => {
    expect(run.stdout).toMatch(/\| Warnings printed \(any process\) \|\s*\| 0 \| — \|\s*\| — \| none \| PASS \|/);
    expect(run.stderr).not.toMatch(/Warning/);
  });
});
