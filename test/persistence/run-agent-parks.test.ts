import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it, onTestFinished, vi } from "vitest";
import { packageRoot } from "../../cli/package-root.js";

// Real processes on a machine the whole suite shares.
vi.setConfig({ testTimeout: 60_000 });

const DIST = join(packageRoot(), "dist");

/**
 * A user's script, as the report ran it: `await runAgent(machine, input)` on an agent whose call
 * needs approval, with no `onApproval`. Node used to exit with code 13 and print nothing (the
 * promise never settled); now the script gets `awaitingApproval` back, and a second process
 * continues the saved run from the same SQLite file. The model is the loopback server over HTTP.
 */
const SCRIPT = `
import { appendFileSync } from "node:fs";
import { z } from "zod";
import { createReactMachine, defineTool, human, ModelClient, requireApproval, restoreAgent, runAgent } from ${JSON.stringify(pathToFileURL(join(DIST, "index.js")).href)};
import { scriptedTurns, startOpenAIServer, textTurn, toolCallTurn } from ${JSON.stringify(pathToFileURL(join(DIST, "testing.js")).href)};
import { SqliteCheckpointStore } from ${JSON.stringify(pathToFileURL(join(DIST, "sqlite.js")).href)};

const [phase, dir, runId] = process.argv.slice(2);
const turns = phase === "park"
  ? scriptedTurns([toolCallTurn([{ id: "call_refund", name: "refund_order", args: { order: "A-98" } }])])
  : scriptedTurns([textTurn("Refunded A-98.")]);
const server = await startOpenAIServer({ respond: turns.respond });
const store = new SqliteCheckpointStore({ path: dir + "/runs.db" });
const refund = defineTool({
  name: "refund_order",
  description: "Refund an order",
  parameters: z.object({ order: z.string() }),
  effectTags: ["payment"],
  execute: ({ order }) => (appendFileSync(dir + "/ledger.txt", order + "\\n"), "refunded " + order),
});
const machine = createReactMachine({
  name: "Shop",
  modelClient: ModelClient.resolve({ baseURL: server.baseURL, apiKey: "test", model: "gpt-4o-mini" }),
  tools: [refund],
  constraints: [requireApproval({ effectTags: ["payment"] })],
  journal: store,
  configFile: false,
});
const output = phase === "park"
  ? await runAgent(machine, { messages: [human("refund A-98")] }, { checkpoints: store })
  : await runAgent(machine, undefined, { snapshot: restoreAgent(machine, store.load(runId)), checkpoints: store, onApproval: () => ({ approve: true }) });
console.log(JSON.stringify({ status: output.status, runId: output.runId, pending: output.pendingApprovals?.map((p) => p.callId), answer: output.finalAnswer, requests: server.requests.length }));
store.close();
await server.close();
`;

describe("runAgent in a script, with no onApproval", () => {
  it("returns awaitingApproval (the process ends normally), and another process finishes the saved run", () => {
    if (!existsSync(join(DIST, "index.js"))) throw new Error("dist/ is missing: run `npm run build` first (npm test does)");
    const dir = mkdtempSync(join(tmpdir(), "jianmu-parks-"));
    // Inside the package, so "zod" resolves from its node_modules as a user's app would.
    const script = join(packageRoot(), "test-output", `parks-${process.pid}.mjs`);
    writeFileSync(script, SCRIPT);
    const run = (...args: string[]) => spawnSync(process.execPath, [script, ...args], { encoding: "utf8", timeout: 30_000 });

    onTestFinished(() => rmSync(script, { force: true }));
    const first = run("park", dir);
    expect({ code: first.status, stderr: first.stderr }).toEqual({ code: 0, stderr: "" });
    const parked = JSON.parse(first.stdout) as { status: string; runId: string; pending: string[]; requests: number };
    expect(parked).toMatchObject({ status: "awaitingApproval", pending: ["call_refund"], requests: 1 });
    expect(existsSync(join(dir, "ledger.txt"))).toBe(false);

    const second = run("approve", dir, parked.runId);
    expect({ code: second.status, stderr: second.stderr }).toEqual({ code: 0, stderr: "" });
    expect(JSON.parse(second.stdout)).toEqual({ status: "succeeded", runId: parked.runId, answer: "Refunded A-98.", requests: 1 });
    expect(readFileSync(join(dir, "ledger.txt"), "utf8")).toBe("A-98\n");
  });
});
