import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/**
 * The acceptance test of durable runs: each step of a run happens in its own Node process, which
 * shares nothing with the next but the SQLite file (checkpoints + tool journal) and a ledger file
 * the tool appends to (so executions can be counted across processes).
 *
 * How the child runs jianmu: Node 20 cannot execute TypeScript and the repository has no TS
 * runner, so `beforeAll` compiles the library with the project's own build config
 * (`tsc -p tsconfig.build.json`) into a scratch directory under `test-output/` (inside the
 * project, so the compiled files resolve `node_modules` as the built package does), and the child
 * is a plain `.mjs` script importing that output. Works the same on a clean clone and in CI.
 */

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const child = join(root, "test/persistence/durable-run-child.mjs");
const scratch = join(root, "test-output");
let dist: string;
let work: string;

beforeAll(() => {
  mkdirSync(scratch, { recursive: true });
  dist = mkdtempSync(join(scratch, "persistence-dist-"));
  work = mkdtempSync(join(scratch, "persistence-run-"));
  const tsc = join(dirname(createRequire(import.meta.url).resolve("typescript/package.json")), "bin", "tsc");
  const build = spawnSync(process.execPath, [tsc, "-p", join(root, "tsconfig.build.json"), "--outDir", dist, "--declaration", "false", "--sourceMap", "false"], {
    cwd: root,
    encoding: "utf8",
  });
  // Type errors are the typecheck's business (tsc still emits); a missing output is ours.
  if (!existsSync(join(dist, "machines/persistence/checkpoints/sqlite-store.js"))) {
    throw new Error(`building jianmu for the child processes failed:\n${build.stdout}\n${build.stderr}`);
  }
}, 120_000);

afterAll(() => {
  for (const dir of [dist, work]) if (dir) rmSync(dir, { recursive: true, force: true });
});

interface Report {
  phase: string;
  requests: number;
  remaining: number;
  died?: string;
  listedBefore?: { runId: string; status: string; state: string }[];
  saved?: { runId: string; status: string; state: string }[];
  output?: { status: string; finalAnswer: string | null; rounds: number; termination: unknown } | null;
  observations?: string[];
  lastRequestMessage?: { role: string; content: string } | null;
}

/** Run one phase in a fresh Node process; returns its exit code and what it reported. */
function phase(name: string, files: { db: string; ledger: string }, runId: string): { code: number | null; report: Report } {
  const report = join(work, `${runId}-${name}.json`);
  const args = { dist, db: files.db, ledger: files.ledger, report, runId, phase: name };
  const result = spawnSync(process.execPath, [child, JSON.stringify(args)], { cwd: root, encoding: "utf8", timeout: 60_000 });
  if (!existsSync(report)) throw new Error(`phase ${name} wrote no report (exit ${result.status}):\n${result.stdout}\n${result.stderr}`);
  return { code: result.status, report: JSON.parse(readFileSync(report, "utf8")) as Report };
}

function filesFor(runId: string) {
  return { db: join(work, `${runId}.db`), ledger: join(work, `${runId}.ledger`) };
}

const ledgerLines = (ledger: string) => (existsSync(ledger) ? readFileSync(ledger, "utf8").split("\n").filter(Boolean) : []);

describe("durable runs across processes", () => {
  it("process 1 waits for approval and exits; process 2 approves and finishes: tool once, model as scripted", () => {
    const files = filesFor("run-approval");

    const first = phase("park", files, "run-approval");
    expect(first.code).toBe(0);
    expect(first.report).toMatchObject({ requests: 1, remaining: 0, output: null });
    expect(first.report.saved).toMatchObject([
      { runId: "run-approval", status: "awaitingApproval", state: "Evaluating.ChildRunning.ToolExecutor.AwaitingApproval" },
    ]);
    expect(ledgerLines(files.ledger)).toEqual([]);

    const second = phase("approve", files, "run-approval");
    expect(second.code).toBe(0);
    expect(second.report.listedBefore).toMatchObject([{ runId: "run-approval", status: "awaitingApproval" }]);
    expect(second.report).toMatchObject({
      requests: 1,
      remaining: 0,
      output: { status: "succeeded", finalAnswer: "Invoice INV-7 is paid.", rounds: 2, termination: null },
      observations: ["paid INV-7"],
    });
    expect(second.report.saved).toMatchObject([{ runId: "run-approval", status: "succeeded", state: "Succeeded" }]);
    const lines = ledgerLines(files.ledger);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^paid INV-7 in pid \d+$/);
  });

  it("killed right after the journal recorded the tool's completion: the resumed run reuses it, no second payment", () => {
    const files = filesFor("run-crash-after");

    const first = phase("crash-after-journal", files, "run-crash-after");
    expect(first.code).toBe(17);
    expect(first.report).toMatchObject({ died: "after the journal recorded the completion", requests: 1, remaining: 0 });
    expect(ledgerLines(files.ledger)).toHaveLength(1);

    const second = phase("resume", files, "run-crash-after");
    expect(second.code).toBe(0);
    // The last checkpoint before the crash was taken when the batch started executing.
    expect(second.report.listedBefore).toMatchObject([{ status: "running", state: "Evaluating.ChildRunning.ToolExecutor.Executing" }]);
    expect(second.report).toMatchObject({
      requests: 1,
      remaining: 0,
      output: { status: "succeeded", finalAnswer: "Done.", rounds: 2 },
      observations: ["paid INV-7"],
      lastRequestMessage: { role: "tool", content: "paid INV-7" },
    });
    expect(ledgerLines(files.ledger)).toHaveLength(1);
  });

  it("killed inside the tool before it returned: the resumed run does not pay again and tells the model the outcome is unknown", () => {
    const files = filesFor("run-crash-inside");

    const first = phase("crash-inside-tool", files, "run-crash-inside");
    expect(first.code).toBe(18);
    expect(ledgerLines(files.ledger)).toHaveLength(1);

    const second = phase("resume", files, "run-crash-inside");
    expect(second.code).toBe(0);
    expect(second.report).toMatchObject({ requests: 1, remaining: 0, output: { status: "succeeded", finalAnswer: "Done." } });
    expect(second.report.observations).toHaveLength(1);
    expect(second.report.observations![0]).toMatch(/^Error: pay_invoice was interrupted: .*may or may not have taken effect/);
    expect(second.report.lastRequestMessage?.content).toBe(second.report.observations![0]);
    expect(ledgerLines(files.ledger)).toHaveLength(1);
  });
});
