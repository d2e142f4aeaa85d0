import { execFile } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { buildDistIfMissing } from "../built-dist.js";

/*
 * Runs the network-free loop measurement at its smallest (`--smoke`), streamed and not, with every
 * contender: each run is checked against the task's final answer inside the script (a contender
 * that answers wrongly makes it fail), and each must get a row. The numbers mean nothing at this size.
 */

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const ROWS = ["chart", "jianmu", "aisdk", "bareModel", "bareExecutor", "bareBoth", "perRound", "noGuard", "longLived", "both", "fewerSteps", "twoStates", "noGuardTelemetry", "noGuardListened", "bothTelemetry", "bothListened"];

function inproc(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [join(ROOT, "bench", "inproc.mjs"), "--smoke", ...args], { cwd: ROOT, timeout: 90_000 }, (error, text, stderr) =>
      error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(text),
    );
  });
}

describe("bench/inproc.mjs", () => {
  it.each([[[]], [["--stream"]]])("measures every contender against the floor without a network (%j)", async (extra) => {
    // The bench imports the compiled library, as a user would (npm ci builds it through `prepare`).
    buildDistIfMissing();
    const stdout = await inproc(["--ladder", "--designs", "--k", "2", ...extra]);
    expect(stdout).toContain(`K=2 P=1, ${extra.length > 0 ? "streaming" : "non-streaming"}`);
    for (const row of ROWS) expect(stdout).toMatch(new RegExp(`^\\| ${row} \\| +-?\\d+ µs \\| +-?\\d+ µs \\| [\\d.]+× \\|$`, "m"));
    // The first token of the floor, jianmu and the AI SDK, answered from memory.
    for (const row of ["floor", "jianmu", "aisdk"]) expect(stdout).toMatch(new RegExp(`^\\| ${row} \\| [\\d.]+ ms \\| [\\d.]+ ms \\| -?[\\d.]+ ms \\| -?[\\d.]+ ms \\|$`, "m"));
  }, 120_000);
});
