import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/**
 * A run parked while an agent two levels down waits for approval, restored in a new Node process
 * that shares nothing with the first but the SQLite file (checkpoints + tool journal) and a ledger
 * the tool appends to. Same harness as test/persistence/durable-run.test.ts: the library is
 * compiled once with the project's build config and the child is a plain .mjs script.
 */

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const child = join(root, "test/composition/nested-durable-child.mjs");
const scratch = join(root, "test-output");
let dist: string;
let work: string;

beforeAll(() => {
  mkdirSync(scratch, { recursive: true });
  dist = mkdtempSync(join(scratch, "nested-dist-"));
  work = mkdtempSync(join(scratch, "nested-run-"));
  const tsc = join(dirname(createRequire(import.meta.url).resolve("typescript/package.json")), "bin", "tsc");
  const build = spawnSync(process.execPath, [tsc, "-p", join(root, "tsconfig.build.json"), "--outDir", dist, "--declaration", "false", "--sourceMap", "false"], {
    cwd: root,
    encoding: "utf8",
  });
  if (!existsSync(join(dist, "machines/composition/agent-tool.js"))) throw new Error(`building jianmu for the child processes failed:\n${build.stdout}\n${build.stderr}`);
}, 180_000);

afterAll(() => {
  for (const dir of [dist, work]) if (dir) rmSync(dir, { recursive: true, force: true });
});

interface Report {
  listedBefore: { runId: string; status: string; state: string }[];
  saved: { runId: string; status: string; state: string; machine: string }[];
  pending: { callId: string; name: string; agentPath?: { agent: string; callId: string }[] }[];
  restoredPending: Report["pending"] | null;
  requests: Record<string, number>;
  remaining: Record<string, number>;
  lastMessages: Record<string, { role: string; content: string } | null>;
  output: { status: string; finalAnswer: string | null } | null;
}

function phase(name: string, runId: string): { code: number | null; report: Report } {
  const report = join(work, `${runId}-${name}.json`);
  const files = { db: join(work, `${runId}.db`), ledger: join(work, `${runId}.ledger`) };
  const result = spawnSync(process.execPath, [child, JSON.stringify({ dist, ...files, report, runId, phase: name })], { cwd: root, encoding: "utf8", timeout: 60_000 });
  if (!existsSync(report)) throw new Error(`phase ${name} wrote no report (exit ${result.status}):\n${result.stdout}\n${result.stderr}`);
  return { code: result.status, report: JSON.parse(readFileSync(report, "utf8")) as Report };
}

const ledger = (runId: string) => {
  const file = join(work, `${runId}.ledger`);
  return existsSync(file) ? readFileSync(file, "utf8").split("\n").filter(Boolean) : [];
};

const PATH = [
  { agent: "Helper", callId: "d1" },
  { agent: "Helper", callId: "h1" },
];

describe("a nested approval across processes", () => {
  it("parks two levels down, restores in a new process, approves there: finishes, the tool ran once, the models were called as scripted", () => {
    const runId = "nested-approval";
    const first = phase("park", runId);
    expect(first.code).toBe(0);
    expect(first.report.pending).toEqual([expect.objectContaining({ callId: "p1", name: "publish", agentPath: PATH })]);
    expect(first.report.saved).toMatchObject([{ runId, machine: "Desk", status: "awaitingApproval", state: "Evaluating.ChildRunning.ToolExecutor.AwaitingApproval" }]);
    expect(first.report.requests).toEqual({ desk: 1, outer: 1, inner: 1 });
    expect(first.report.remaining).toEqual({ desk: 0, outer: 0, inner: 0 });
    expect(ledger(runId)).toEqual([]);

    const second = phase("approve", runId);
    expect(second.code).toBe(0);
    expect(second.report.listedBefore).toMatchObject([{ runId, status: "awaitingApproval" }]);
    // The restored snapshot alone says what waits, and where.
    expect(second.report.restoredPending).toEqual([expect.objectContaining({ callId: "p1", agentPath: PATH })]);
    expect(second.report.output).toMatchObject({ status: "succeeded", finalAnswer: "Desk: the notice is out." });
    expect(second.report.saved).toMatchObject([{ runId, status: "succeeded", state: "Succeeded" }]);
    // Each agent's model was asked once more, with its own conversation restored: the right nested agent got each answer.
    expect(second.report.requests).toEqual({ desk: 1, outer: 1, inner: 1 });
    expect(second.report.remaining).toEqual({ desk: 0, outer: 0, inner: 0 });
    expect(second.report.lastMessages).toEqual({
      inner: expect.objectContaining({ role: "tool", content: "published notice" }),
      outer: expect.objectContaining({ role: "tool", content: "Inner helper: published notice." }),
      desk: expect.objectContaining({ role: "tool", content: "Outer helper: inner helper published it." }),
    });
    const lines = ledger(runId);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^published notice in pid \d+$/);
  });
});
