import { execFile, execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/*
 * Runs the benchmark harness end to end at tiny sizes (`--smoke`: one repetition) and checks
 * that it produces the table with a ratio for every measure and writes its result files. The
 * numbers themselves mean nothing at these sizes and are not asserted.
 */

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const out = mkdtempSync(join(tmpdir(), "jianmu-bench-smoke-"));

interface BenchRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

let run: BenchRun;

beforeAll(async () => {
  // The bench imports the compiled library, as a user would (npm ci builds it through `prepare`).
  if (!existsSync(join(ROOT, "dist", "index.js"))) {
    execFileSync(process.execPath, [join(ROOT, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.build.json"], { cwd: ROOT });
  }
  run = await new Promise<BenchRun>((resolve) => {
    execFile(process.execPath, [join(ROOT, "bench", "run.mjs"), "--smoke", "--out", out], { cwd: ROOT, timeout: 90_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === "number" ? error.code : 1) : 0, stdout, stderr });
    });
  });
}, 100_000);

afterAll(() => rmSync(out, { recursive: true, force: true }));

interface Row {
  measure: string;
  ratioText: string;
  targetText: string;
  result: string;
  floor?: number;
  chart?: number;
  jianmu?: number;
  ratio?: number;
  of?: string;
}

describe("npm run bench --smoke", () => {
  it("finishes without a harness error", () => {
    expect(run.stdout + run.stderr).not.toMatch(/^Errors:/m);
    expect(run.code, run.stdout + run.stderr).toBe(0);
  });

  it("prints the table with a ratio and a verdict for each target", () => {
    expect(run.stdout).toContain("| Measure | floor (openai SDK loop) | jianmu | ratio | target | result |");
    const targetRows = run.stdout.split("\n").filter((line) => /\| (PASS|FAIL) \|$/.test(line));
    const measures = [
      "non-streaming: wall time",
      "streaming: wall time",
      "Throughput",
      "Heap per in-flight agent",
      "Heap retained per finished run",
      "batch span",
      "Warnings printed",
    ];
    for (const measure of measures) expect(targetRows.some((line) => line.includes(measure)), `a PASS/FAIL row for "${measure}"`).toBe(true);
    for (const line of targetRows.filter((l) => /Latency|Throughput|Heap per/.test(l))) {
      expect(line).toMatch(/\| \d+\.\d\d× \|/);
    }
  });

  it("splits each latency and throughput row with the bare XState chart reference", () => {
    const lines = run.stdout.split("\n");
    // Each jianmu / floor row of these measures is followed by chart / floor, then jianmu / chart.
    const parents = lines.filter((line) => /^\| (Latency, .*: (wall|client CPU) time|Throughput, )/.test(line));
    expect(parents).toHaveLength(5);
    for (const parent of parents) {
      const at = lines.indexOf(parent);
      expect(lines[at + 1], `the chart / floor row under "${parent}"`).toMatch(/^\| +↳ bare XState chart \/ floor .*\| chart: [\d.]+ (ms|runs\/s) \| \d+\.\d\d× \| — \| info \|$/);
      expect(lines[at + 2], `the jianmu / chart row under "${parent}"`).toMatch(/^\| +↳ jianmu \/ bare XState chart .*\| chart: [\d.]+ (ms|runs\/s) \| [\d.]+ (ms|runs\/s) \| \d+\.\d\d× \| — \| info \|$/);
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
    expect(Object.keys(report.versions)).toEqual(expect.arrayContaining(["node", "jianmu", "openai", "xstate", "zod"]));
    expect(report.errors).toEqual([]);
    const latency = report.rows.find((row) => row.measure.includes("non-streaming: wall time"));
    expect(latency?.floor).toBeGreaterThan(0);
    expect(latency?.jianmu).toBeGreaterThan(0);
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
    expect(run.stdout).toMatch(/\| Warnings printed \(any process\) \|\s*\| 0 \| — \| none \| PASS \|/);
    expect(run.stderr).not.toMatch(/Warning/);
  });
});
