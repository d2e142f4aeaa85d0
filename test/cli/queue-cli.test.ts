import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { OpenAIServer } from "../../testing/openai-server.js";
import { scriptMessage, startScriptServer } from "../queue/script-model.js";
import { CLI, cleanEnv, cliCommand, ROOT, runCli, runInTerminal } from "./cli-harness.js";

// Real worker processes and CLI processes, on a machine the whole suite shares.
vi.setConfig({ testTimeout: 90_000, hookTimeout: 90_000 });

const AGENTS = join(ROOT, "test/postgres/cli-agents.mjs");
const tmp = (prefix: string) => mkdtempSync(join(tmpdir(), prefix));

describe("the run queue's commands have help, as the top-level help promises", () => {
  it.each(["worker", "runs", "approve", "reject", "cancel"])("jianmu help %s, and the command's --help", async (command) => {
    const viaHelp = await runCli(["help", command]);
    const viaFlag = await runCli([command, "--help"]);
    expect(viaHelp).toMatchObject({ code: 0, stderr: "" });
    expect(viaHelp.stdout).toMatch(new RegExp(`^Usage: jianmu ${command} `));
    expect(viaHelp.stdout).toContain("--store <s>");
    expect(viaFlag).toEqual(viaHelp);
  });

  it("jianmu help run shows the queue's flags, and an unknown command lists every command", async () => {
    const run = await runCli(["help", "run"]);
    for (const flag of ["--store <s>", "--agent <name>", "--detach"]) expect(run.stdout).toContain(flag);
    const unknown = await runCli(["frobnicate"]);
    expect(unknown).toMatchObject({ code: 2, stderr: 'jianmu: unknown command "frobnicate": the commands are run, eval, view, serve, worker, runs, approve, reject, cancel, help (jianmu help lists them)\n' });
  });
});

describe("--store mistakes: one line naming the flag and the fix, nothing created", () => {
  it.each([
    ["another URL scheme", ["runs", "--store", "mysql://x"], /^jianmu: --store mysql:\/\/x: unknown URL scheme "mysql:"; use a PostgreSQL URL \(postgres:\/\/.*\) or a SQLite file path/],
    ["a typo of postgres://", ["worker", "--store", "postgress://db/x", "--agents", AGENTS], /^jianmu: --store postgress:\/\/db\/x: unknown URL scheme "postgress:"/],
    ["a listing of a store that is not there", ["runs", "--store", "nope.db"], /^jianmu: --store nope\.db: there is no run queue at .*nope\.db \(nothing was created\)/],
    ["--store without a value", ["run", "--store"], /^jianmu: --store needs a value: --store <value> \(see jianmu run --help\)$/],
  ])("%s", async (_name, args, expected) => {
    const dir = tmp("jianmu-store-");
    const result = await runCli(args, { cwd: dir });
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(result.stderr.trim()).toMatch(expected);
    expect(readdirSync(dir)).toEqual([]);
  });

  it("a TypeScript --agents module gets the loader hint", async () => {
    const dir = tmp("jianmu-agents-ts-");
    writeFileSync(join(dir, "agents.ts"), "export const agents: number = 1;\n");
    const result = await runCli(["worker", "--store", "runs.db", "--agents", "./agents.ts"], { cwd: dir });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^jianmu: cannot load --agents \.\/agents\.ts: Unknown file extension "\.ts".*; a TypeScript module needs a loader: node --import tsx node_modules\/jianmu\/dist\/cli\/main\.js worker --agents \.\/agents\.ts \.\.\., or compile it to JavaScript\n$/);
  });
});

describe("an attached jianmu run --store says when its run waits for approval", () => {
  let server: OpenAIServer;
  let dir: string;
  let db: string;
  let stopWorker: () => Promise<void>;
  beforeAll(async () => {
    server = await startScriptServer();
    dir = tmp("jianmu-attached-");
    db = join(dir, "runs.db");
    const worker = spawn(process.execPath, [CLI, "worker", "--store", db, "--agents", AGENTS, "--poll-ms", "100"], { env: cleanEnv({ SCRIPT_BASE_URL: server.baseURL }), stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    worker.stdout.setEncoding("utf8").on("data", (chunk: string) => (out += chunk));
    const exited = new Promise((resolve) => worker.once("exit", resolve));
    stopWorker = async () => {
      worker.kill("SIGTERM");
      await exited;
    };
    for (let i = 0; i < 200 && !out.includes("started"); i++) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(out).toContain("started");
  });
  afterAll(async () => {
    await stopWorker?.();
    await server?.close();
  });

  it("without a terminal: prints the approve and reject command lines, and ends with the answer once approved elsewhere", async () => {
    const task = scriptMessage({ calls: [{ name: "pay", note: "attached-1" }], answer: "paid, attached" }).content;
    const child = spawn(process.execPath, [CLI, "run", "--store", db, "--agent", "approver", task], { env: cleanEnv(), stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
    for (let i = 0; i < 200 && !stderr.includes("jianmu approve"); i++) await new Promise((resolve) => setTimeout(resolve, 50));
    const runId = /^submitted (\S+);/m.exec(stderr)?.[1];
    expect(runId).toBeDefined();
    expect(stderr).toContain(`run ${runId} waits for approval of call_0: pay {"note":"attached-1"}`);
    expect(stderr).toContain(`  approve it: jianmu approve ${runId} call_0 --store ${db}\n`);
    expect(stderr).toContain(`  reject it:  jianmu reject ${runId} call_0 --store ${db} --reason "<why>"\n`);
    // The suggested line works, from another process.
    const approved = await runCli(["approve", runId!, "call_0", "--store", db]);
    expect(approved).toMatchObject({ code: 0, stdout: `${runId}: call_0 approved\n` });
    expect(await exited).toBe(0);
    expect(stdout).toBe("paid, attached\n");
  });

  it("on a terminal: asks y/n, sends the answer to the store, and prints the answer", async () => {
    const task = scriptMessage({ calls: [{ name: "pay", note: "attached-2" }], answer: "paid at the prompt" }).content;
    const result = await runInTerminal(cliCommand(["run", "--store", db, "--agent", "approver", task]), [{ when: /approve pay\? \[y\]es \/ \[n\]o: /, send: "y\r" }], { env: { NO_COLOR: "1" } });
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/waits for approval of call_0: pay \{"note":"attached-2"\}/);
    expect(result.stdout).toContain("call_0 approved");
    expect(result.stdout).toContain("paid at the prompt");
  });

  it("a run id the store does not know: says so, and how to list the runs (no API advice)", async () => {
    for (const args of [["approve", "nope"], ["cancel", "nope"], ["runs", "show", "nope"]]) {
      const result = await runCli([...args, "--store", db]);
      expect(result).toMatchObject({ code: 2, stderr: `jianmu: no run "nope" in this store; list its runs with: jianmu runs --store ${db}\n` });
    }
  });

  it("view --store of a finished run shows its figures from the checkpoint, and says which ones a checkpoint does not keep", async () => {
    const task = scriptMessage({ calls: [{ name: "record", note: "viewed" }], answer: "recorded and viewed" }).content;
    const submitted = await runCli(["run", "--store", db, "--agent", "basic", task]);
    expect(submitted).toMatchObject({ code: 0, stdout: "recorded and viewed\n" });
    const runId = /^submitted (\S+);/m.exec(submitted.stderr)![1]!;
    const page = join(dir, "viewed.html");
    expect(await runCli(["view", "--store", db, runId, "--out", page])).toMatchObject({ code: 0 });
    const html = readFileSync(page, "utf8");
    const figure = (key: string) => new RegExp(`data-summary="${key}" data-value="([^"]+)"`).exec(html)?.[1];
    expect({ iterations: figure("iterations"), tokens: figure("tokens"), tools: figure("tool-calls"), duration: figure("duration"), models: figure("model-calls"), approvals: figure("approvals") }).toEqual({
      iterations: "1",
      tokens: "30",
      tools: "1",
      duration: "unknown",
      models: "unknown",
      // Read from its checkpoints: none was put to a person.
      approvals: "0",
    });
    expect(html).toMatch(/id="run-status" data-status="succeeded"/);
    expect(html).toContain('id="no-telemetry"');
    expect(existsSync(page)).toBe(true);
  });

  it("view --store counts the run's approvals from its checkpoints: each call put to a person, and how it ended", async () => {
    const task = scriptMessage({ calls: [{ name: "pay", note: "viewed-1" }, { name: "pay", note: "viewed-2" }], answer: "one paid" }).content;
    const submitted = await runCli(["run", "--store", db, "--agent", "approver", "--detach", task]);
    expect(submitted.code).toBe(0);
    const runId = submitted.stdout.trim();
    /** Retries `args` until it succeeds: the worker gets to the call's approval in its own time. */
    const once = async (args: string[]) => {
      for (let i = 0; i < 200; i++) {
        if ((await runCli(args)).code === 0) return;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      throw new Error(`never succeeded: jianmu ${args.join(" ")}`);
    };
    await once(["approve", runId, "call_0", "--store", db]);
    await once(["reject", runId, "call_1", "--store", db, "--reason", "one is enough"]);
    for (let i = 0; i < 200 && !(await runCli(["runs", "show", runId, "--store", db])).stdout.includes("succeeded"); i++) await new Promise((resolve) => setTimeout(resolve, 100));
    const page = join(dir, "approvals.html");
    expect(await runCli(["view", "--store", db, runId, "--out", page])).toMatchObject({ code: 0 });
    const html = readFileSync(page, "utf8");
    expect(/data-summary="approvals" data-value="([^"]+)"/.exec(html)?.[1]).toBe("2");
    expect(html).toContain("1 approved · 1 not (from its checkpoints)");
    expect(html).toMatch(/id="run-status" data-status="succeeded"/);
  });
});
