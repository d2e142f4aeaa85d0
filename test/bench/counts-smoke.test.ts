import { execFile } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { buildDistIfMissing } from "../built-dist.js";

/*
 * Runs the load-independent counts (bench/counts.mjs with its XState hook) at K=2 and reads its
 * table back: every row is there, the hook saw the actions an inspector cannot (assign,
 * enqueueActions), and jianmu's chart has the bare chart's shape (microsteps, events, actors), which
 * bench/README.md's comparison rests on.
 */

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

function counts(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ["--import", join(ROOT, "bench", "count-hooks.mjs"), join(ROOT, "bench", "counts.mjs"), ...args], { cwd: ROOT, timeout: 60_000 }, (error, text, stderr) =>
      error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(text),
    );
  });
}

/** A row of the table: its cells after the contender's name, numbers where there are numbers. */
function row(stdout: string, name: string): (number | undefined)[] {
  const line = stdout.split("\n").find((l) => l.startsWith(`| ${name} |`));
  if (!line) throw new Error(`no row ${name} in:\n${stdout}`);
  return line.split("|").slice(2, -1).map((cell) => (cell.trim() === "" ? undefined : Number(cell)));
}

describe("bench/counts.mjs", () => {
  it("counts every contender's actions, microsteps, actors, controllers and timers", async () => {
    buildDistIfMissing();
    const stdout = await counts(["--k", "2"]);
    expect(stdout).toContain("Per K=2 P=1 run, non-streaming");
    const [resolved, emits, deferred, microsteps, events, actors, controllers, timers] = row(stdout, "jianmu");
    const chart = row(stdout, "chart");
    const unheard = row(stdout, "jianmu, runAgent unheard");
    // The hook reports more than an inspector sees: every assign and enqueueActions besides emit, spawn and stop.
    expect(resolved!).toBeGreaterThan(deferred!);
    expect(chart[0]!).toBeGreaterThan(chart[2]!);
    // Heard, jianmu emits its telemetry; unheard, only loop.terminated.
    expect(emits!).toBeGreaterThan(10);
    expect(unheard[1]).toBe(1);
    expect(unheard[0]!).toBeLessThan(resolved!);
    // The same chart shape as the bare chart's.
    expect([microsteps, events, actors]).toEqual(chart.slice(3, 6));
    // One model call at least makes an SDK controller and timer: 3 calls at K=2.
    expect(controllers!).toBeGreaterThanOrEqual(3);
    expect(timers!).toBeGreaterThanOrEqual(3);
  }, 90_000);
});
