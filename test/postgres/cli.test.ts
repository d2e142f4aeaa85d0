import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { OpenAIServer } from "../../testing/openai-server.js";
import { scriptMessage, startScriptServer } from "../queue/script-model.js";
import { freshDatabase } from "./database.js";
import { checkBuilt, dist } from "./worker-processes.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const agentsModule = join(root, "test/postgres/cli-agents.mjs");

/** The run-queue commands of the built CLI against PostgreSQL: worker, run --detach, runs, approve, cancel. */
describe("jianmu worker / runs / approve against PostgreSQL", () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let server: OpenAIServer;
  beforeAll(async () => {
    checkBuilt();
    db = await freshDatabase();
    server = await startScriptServer();
  });
  afterAll(async () => {
    await server?.close();
    await db?.drop();
  });

  const cli = (...args: string[]) => {
    const result = spawnSync(process.execPath, [join(dist, "cli/main.js"), ...args], { encoding: "utf8", env: { ...process.env, SCRIPT_BASE_URL: server.baseURL } });
    return { code: result.status, out: result.stdout, err: result.stderr };
  };

  it("submits a run, parks it, approves it from another process, and shows the result", async () => {
    const store = ["--store", db.url, "--schema", "cli"];
    const worker = spawn(process.execPath, [join(dist, "cli/main.js"), "worker", ...store, "--agents", agentsModule, "--poll-ms", "100", "--json"], {
      env: { ...process.env, SCRIPT_BASE_URL: server.baseURL },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    worker.stdout.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
    const exited = new Promise<number | null>((resolve) => worker.once("exit", resolve));
    try {
      while (!output.includes("worker.started")) await new Promise((resolve) => setTimeout(resolve, 50));
      const task = scriptMessage({ calls: [{ name: "pay", note: "cli-1" }], answer: "paid from the CLI" }).content;
      // A scan of the invoice goes with the task: kept once in PostgreSQL, apart from the checkpoints.
      const scanDir = mkdtempSync(join(tmpdir(), "jianmu-cli-scan-"));
      const scan = randomBytes(6_000);
      writeFileSync(join(scanDir, "scan.png"), scan);
      const submitted = cli("run", ...store, "--agent", "approver", "--detach", "--image", join(scanDir, "scan.png"), task);
      expect(submitted.err).toBe("");
      expect(submitted.code).toBe(0);
      const runId = submitted.out.trim();
      expect(runId).toMatch(/^[\w-]+$/);
      let listed = "";
      for (let i = 0; i < 100 && !listed.includes("awaitingApproval"); i++) {
        listed = cli("runs", ...store, "--json").out;
        if (!listed.includes("awaitingApproval")) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(JSON.parse(listed.trim().split("\n")[0]!)).toMatchObject({ runId, status: "awaitingApproval", pendingApprovals: [{ callId: "call_0", name: "pay" }] });
      const approved = cli("approve", runId, ...store);
      expect(approved).toMatchObject({ code: 0, out: `${runId}: call_0 approved\n` });
      let shown: { status?: string; finalAnswer?: string } = {};
      for (let i = 0; i < 100 && shown.status !== "succeeded"; i++) {
        shown = JSON.parse(cli("runs", "show", runId, ...store).out) as typeof shown;
        if (shown.status !== "succeeded") await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(shown).toMatchObject({ status: "succeeded", finalAnswer: "paid from the CLI" });
      const page = join(mkdtempSync(join(tmpdir(), "jianmu-cli-view-")), "run.html");
      expect(cli("view", "--store", db.url, "--schema", "cli", runId, "--out", page)).toMatchObject({ code: 0, out: expect.stringContaining(`wrote ${page}`) });
      const html = readFileSync(page, "utf8");
      expect(html).toContain("paid from the CLI");
      expect(html).toContain("AwaitingApproval");
      // The stored run's scan, read back from the blob table for the viewer.
      expect(html).toContain(`src="data:image/png;base64,${scan.toString("base64")}"`);
      expect(cli("approve", runId, ...store)).toMatchObject({ code: 2, err: expect.stringContaining("already succeeded") });
      expect(cli("cancel", "no-such-run", ...store)).toMatchObject({ code: 2, err: `jianmu: no run "no-such-run" in this store; list its runs with: jianmu runs --store ${db.url} --schema cli\n` });
    } finally {
      worker.kill("SIGTERM");
    }
    expect(await exited).toBe(0);
    expect(output).toContain('"type":"worker.stopped"');
  }, 60_000);

  it("names the fix for a missing or bad --store", () => {
    expect(cli("runs")).toMatchObject({ code: 2, err: expect.stringContaining("--store is required") });
    expect(cli("runs", "--store", "postgres://")).toMatchObject({ code: 2, err: expect.stringContaining("connectionString") });
    expect(cli("worker", "--store", db.url, "--schema", "cli2")).toMatchObject({ code: 2, err: expect.stringContaining("--agents is required") });
  });

  it("a reading command never creates a schema: runs --schema <absent> says there is no queue there", async () => {
    for (const args of [["runs"], ["runs", "show", "r1"], ["approve", "r1"], ["view", "r1"]]) {
      expect(cli(...args, "--store", db.url, "--schema", "absent")).toMatchObject({ code: 2, err: expect.stringMatching(/^jianmu: there is no run queue in schema absent here \(nothing was created\)/) });
    }
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      expect((await client.query("SELECT 1 FROM pg_namespace WHERE nspname = 'absent'")).rowCount).toBe(0);
    } finally {
      await client.end();
    }
  });
});
