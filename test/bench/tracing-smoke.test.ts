import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { buildDistIfMissing } from "../built-dist.js";

/*
 * Runs the tracing-overhead measurement at its smallest (`--smoke`) and checks that it completes
 * both contenders (it throws if a traced run's spans are missing) and reports a ratio for each
 * measure. The numbers mean nothing at this size and are not asserted.
 */

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const out = mkdtempSync(join(tmpdir(), "jianmu-bench-tracing-"));
afterAll(() => rmSync(out, { recursive: true, force: true }));

describe("bench/tracing.mjs", () => {
  it("measures runs without and with a tracer and reports their ratio", async () => {
    // The bench imports the compiled library (`jianmu/otel` is dist/otel.js), as a user would.
    buildDistIfMissing("otel.js");
    const json = join(out, "tracing.json");
    const stdout = await new Promise<string>((resolve, reject) => {
      execFile(process.execPath, [join(ROOT, "bench", "tracing.mjs"), "--smoke", "--json", json], { cwd: ROOT, timeout: 60_000 }, (error, text, stderr) =>
        error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(text),
      );
    });
    expect(stdout).toMatch(/^\| wall \| [\d.]+ \| [\d.]+ \| [\d.]+x \|$/m);
    expect(stdout).toMatch(/^\| cpu \| [\d.]+ \| [\d.]+ \| [\d.]+x \|$/m);
    const result = JSON.parse(readFileSync(json, "utf8")) as { ratio: { wall: number; cpu: number }; task: { spansPerTracedRun: number } };
    expect(result.task.spansPerTracedRun).toBe(1 + 4 + 6);
    expect(result.ratio.wall).toBeGreaterThan(0);
    expect(result.ratio.cpu).toBeGreaterThan(0);
  }, 90_000);
});
