import { spawnSync } from "node:child_process";
import { mkdirSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { type Browser, type Page } from "playwright-core";
import { launchChromium } from "../chromium.js";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { z } from "zod";
import { human } from "../../actors/messages.js";
import { viewStoredRun } from "../../cli/view-store.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { forkRun } from "../../machines/persistence/log/fork.js";
import type { CheckpointEntry } from "../../machines/persistence/log/log-store.js";
import { restoreAgent } from "../../machines/persistence/persistence.js";
import { runAgent } from "../../machines/runner.js";
import { SqliteRunStore } from "../../queue/sqlite/store.js";
import { scriptedModel, type ScriptedResponse } from "../../testing/scripted-model.js";
import { defineTool } from "../../tools/tool.js";

/**
 * `jianmu view --store` of a run with a fork, opened in headless Chromium: the history of both
 * branches, the checkpoint shown, and how the fork's conversation differs from the original's.
 */
const OUT = resolve("test-output", "visualize", "store-history");
const ROOT = resolve(import.meta.dirname, "../..");

const lookup = defineTool({ name: "lookup", description: "Look a fact up", parameters: z.object({ q: z.string() }), execute: ({ q }) => `facts about ${q}` });
const agent = (store: SqliteRunStore, responses: ScriptedResponse[]) => createReactMachine({ modelClient: scriptedModel(responses), tools: [lookup], journal: store, configFile: false });

describe("a stored run's history and branches in the viewer", () => {
  let browser: Browser;
  let store: SqliteRunStore;
  let history: CheckpointEntry[];
  const db = join(OUT, "runs.db");

  const open = async (file: string): Promise<Page> => {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    await page.route("**/*", (route) => (route.request().url().startsWith("file:") ? route.continue() : route.abort()));
    await page.goto(pathToFileURL(file).href);
    return page;
  };

  beforeAll(async () => {
    rmSync(OUT, { recursive: true, force: true });
    mkdirSync(OUT, { recursive: true });
    store = new SqliteRunStore({ path: db });
    const call = { toolCalls: [{ id: "call_1", name: "lookup", arguments: { q: "tides" } }] };
    await runAgent(agent(store, [call, { content: "Answer A" }]), { runId: "orig", messages: [human("Some context."), human("Question A?")] }, { checkpoints: store });
    history = await store.history("orig");
    const first = history.find((h) => h.state.endsWith("AgentLLM"))!;
    const source = (await store.load("orig", first.checkpointId))!;
    const messages = [...(source.snapshot.context as { state: { messages: ReturnType<typeof human>[] } }).state.messages];
    messages[messages.length - 1] = human("Question B?");
    await forkRun(store, "orig", { from: first.checkpointId, runId: "orig-b", messages });
    const fork = agent(store, [{ content: "Answer B" }]);
    await runAgent(fork, {}, { snapshot: restoreAgent(fork, await store.load("orig-b")), checkpoints: store });
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await store?.close();
  });

  test("lists every checkpoint of both branches as a tree, marks the one shown, and diffs the fork's conversation", async () => {
    const html = join(OUT, "orig.html");
    await viewStoredRun(store, { runId: "orig", storeArgs: `--store ${db}`, outPath: html, cwd: OUT });
    const page = await open(html);
    const rows = page.locator('#history-panel li[data-branch="orig"] > table tbody tr');
    expect(await rows.count()).toBe(history.length);
    expect(await page.locator("#history-panel tr.shown").getAttribute("data-checkpoint")).toBe(history.at(-1)!.checkpointId);
    expect(await rows.nth(0).locator("code").textContent()).toBe(`jianmu view --store ${db} orig --checkpoint ${history[0]!.checkpointId}`);
    // The fork hangs under the original, with its own history.
    const fork = page.locator('#history-panel li[data-branch="orig"] li[data-branch="orig-b"]');
    expect(await fork.locator(".branch-head").textContent()).toContain(`forked from run orig at checkpoint ${history.find((h) => h.state.endsWith("AgentLLM"))!.checkpointId}`);
    expect(await fork.locator("table tbody tr").count()).toBe((await store.history("orig-b")).length);
    // The diff: one message in common, then each branch's own.
    const diff = page.locator('.branch-diff[data-diff="orig..orig-b"]');
    expect(await diff.getAttribute("data-shared")).toBe("1");
    const original = await diff.locator('[data-side="orig"]').textContent();
    const forked = await diff.locator('[data-side="orig-b"]').textContent();
    expect(original).toContain("Question A?");
    expect(original).toContain("Answer A");
    expect(forked).toContain("Question B?");
    expect(forked).toContain("Answer B");
    expect(forked).not.toContain("Question A?");
    await page.screenshot({ path: join(OUT, "history.png"), fullPage: true });
    await page.close();
  });

  test("opens an earlier checkpoint: the page shows the run as it was then", async () => {
    const earlier = history.find((h) => h.state.endsWith("AgentLLM"))!;
    const html = join(OUT, "earlier.html");
    await viewStoredRun(store, { runId: "orig", checkpointId: earlier.checkpointId, storeArgs: `--store ${db}`, outPath: html, cwd: OUT });
    const page = await open(html);
    expect(await page.locator("#history-panel tr.shown").getAttribute("data-checkpoint")).toBe(earlier.checkpointId);
    // Two user messages and nothing else yet: the model had not answered at that checkpoint.
    expect(await page.locator("#messages-panel [data-message]").count()).toBe(2);
    await page.close();
    await expect(viewStoredRun(store, { runId: "orig", checkpointId: "999999", storeArgs: "", outPath: html, cwd: OUT })).rejects.toThrow(/run orig has no checkpoint 999999/);
  });

  test("through the command line: --checkpoint picks the checkpoint", () => {
    const html = join(OUT, "cli.html");
    const cli = spawnSync(process.execPath, [join(ROOT, "dist/cli/main.js"), "view", "--store", db, "orig-b", "--checkpoint", "0", "--out", html], { encoding: "utf8", cwd: OUT });
    expect(cli.status).toBe(2);
    expect(cli.stderr).toContain("run orig-b has no checkpoint 0");
    const ok = spawnSync(process.execPath, [join(ROOT, "dist/cli/main.js"), "view", "--store", db, "orig-b", "--out", html], { encoding: "utf8", cwd: OUT });
    expect(ok.stdout).toContain(`wrote ${html}`);
    expect(ok.status).toBe(0);
  });
});
