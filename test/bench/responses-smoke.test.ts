import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

/*
 * Runs the Responses-vs-Chat-Completions measurement at its smallest (`--smoke`), streamed and
 * whole: all four contenders must reach the task's answer (the script throws otherwise) through the
 * bench server's Chat Completions and Responses replies, and each API gets its ratio. The numbers
 * mean nothing at this size and are not asserted.
 */

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const out = mkdtempSync(join(tmpdir(), "jianmu-bench-responses-"));
afterAll(() => rmSync(out, { recursive: true, force: true }));

describe("bench/responses.mjs", () => {
  for (const whole of [false, true]) {
    it(`measures both APIs against their raw SDK loops and reports the ratios (${whole ? "whole responses" : "streamed"})`, async () => {
      if (!existsSync(join(ROOT, "dist", "index.js"))) throw new Error("dist/ is missing: run `npm run build` first (the bench imports the built package)");
      const json = join(out, `responses-${whole}.json`);
      const stdout = await new Promise<string>((resolve, reject) => {
        execFile(process.execPath, [join(ROOT, "bench", "responses.mjs"), "--smoke", "--rounds", "2", "--json", json, ...(whole ? ["--whole"] : [])], { cwd: ROOT, timeout: 90_000 }, (error, text, stderr) =>
          error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(text),
        );
      });
      expect(stdout).toMatch(/^\| chat \| [\d.]+ \| [\d.]+ \| [\d.]+× \|/m);
      expect(stdout).toMatch(/^\| responses \| [\d.]+ \| [\d.]+ \| [\d.]+× \|/m);
      expect(stdout).toMatch(/^Responses ratio \/ Chat Completions ratio: wall [\d.]+× \((PASS|FAIL)\), CPU [\d.]+× \((PASS|FAIL)\); target ≤ 1\.05×$/m);
      const result = JSON.parse(readFileSync(json, "utf8")) as { task: { modelCallsPerRun: number; stream: boolean }; ratio: Record<"chat" | "responses", { wall: number; cpu: number }> };
      expect(result.task).toMatchObject({ modelCallsPerRun: 3, stream: !whole });
      for (const api of ["chat", "responses"] as const) expect(result.ratio[api].wall).toBeGreaterThan(0);
    }, 120_000);
  }
});
