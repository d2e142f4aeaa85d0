import { execFile } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { buildDistIfMissing } from "../built-dist.js";

/*
 * Runs the promotion measure at its smallest (`--smoke`): every contender gets a row with its
 * promoted kilobytes per run and the functions that allocated them. The numbers mean nothing at
 * this size; that the profiler's tree is read into rows does.
 */

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

function promotion(args: string[]): Promise<{ stdout: string; error: Error | null; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [join(ROOT, "bench", "promotion.mjs"), "--smoke", ...args], { cwd: ROOT, timeout: 90_000 }, (error, stdout, stderr) => resolve({ stdout, error, stderr }));
  });
}

describe("bench/promotion.mjs", () => {
  beforeAll(() => {
    // The bench imports the compiled library, as a user would (npm ci builds it through `prepare`).
    buildDistIfMissing();
  });

  it("prints the bytes each contender promotes per run, with where they were allocated", async () => {
    const { stdout, error, stderr } = await promotion([]);
    expect(error, stderr).toBeNull();
    for (const row of ["floor", "chart", "jianmu", "aisdk"]) {
      expect(stdout).toMatch(new RegExp(`^\\| ${row} \\| \\d+\\.\\d \\| [^|]+:\\d+ \\d+\\.\\d[^|]* \\|$`, "m"));
    }
  }, 120_000);

  it("names the contenders it knows when asked for one it does not", async () => {
    const { error, stderr } = await promotion(["--only", "nope"]);
    expect(error).not.toBeNull();
    expect(stderr).toContain("unknown contender nope; use floor, chart, jianmu, aisdk");
  }, 60_000);
});
