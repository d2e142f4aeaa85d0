import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { checkBuilt } from "../postgres/worker-processes.js";

/*
 * Runs the run queue's chaos bench (issue 34's experiments, `npm run bench:queue:chaos`) at its
 * smallest (`--smoke`: 2 worker processes, 6 runs, 200 synthetic parked rows, a server with
 * max_connections=20), with NUL and unpaired surrogates in every third run and the server crashed
 * (`pg_ctl restart -m immediate`) while the runs are submitted, so the script keeps working as the
 * schema changes and the queue rides out a crash that may take unflushed commits (claims) with it:
 * it must finish every run once, lose no tool result, keep the odd text exactly and measure the claim
 * beside the parked rows. Timings are not asserted.
 */

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const out = mkdtempSync(join(tmpdir(), "jianmu-bench-chaos-"));
afterAll(() => rmSync(out, { recursive: true, force: true }));

describe("bench/queue/chaos.mjs", () => {
  it("--smoke --odd --crash: every run finished once across a crash of the server, no tool result lost, the claim measured beside parked rows", async () => {
    checkBuilt();
    await new Promise<string>((resolve, reject) => {
      execFile(process.execPath, [join(ROOT, "bench", "queue", "chaos.mjs"), "--smoke", "--odd", "--submit-over", "3000", "--restart-at", "1500", "--crash", "--timeout", "90000", "--out", out, "--name", "smoke"], { cwd: ROOT, timeout: 150_000 }, (error, text, stderr) =>
        error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(text),
      );
    });
    const results = JSON.parse(readFileSync(join(out, "queue-chaos-smoke.json"), "utf8")) as {
      claim: { parked: number; empty: { p50Ms: number }; beside: { p50Ms: number } };
      chaos: Record<string, number> & { failures: unknown[] };
    };
    expect(results.chaos).toMatchObject({ runs: 6, succeeded: 6, failed: 0, stuck: 0, duplicatedEffects: 0, resultsLost: 0, journalUnavailable: 0, oddRuns: 2, oddRunsExact: 2 });
    expect(results.chaos.failures).toEqual([]);
    expect(results.chaos.restartMs).toBeGreaterThan(0);
    expect(results.chaos.distinctEffects).toBe(results.chaos.plannedCalls);
    expect(results.claim.parked).toBe(200);
    expect(results.claim.beside.p50Ms).toBeGreaterThan(0);
  }, 180_000);
});
