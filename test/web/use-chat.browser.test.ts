import { mkdirSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { type Browser, type Page } from "playwright-core";
import { launchChromium } from "../chromium.js";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { toNodeListener } from "../../http.js";
import { serveStatic } from "../../examples/web/static-files.js";
import { startStack, tempDir, TASK, type WebStack } from "./helpers.js";

/**
 * A minimal page on the AI SDK's `useChat` (@ai-sdk/react, default transport, so it posts to
 * /api/chat) in headless Chromium, driving the payments agent through `handler.aiSdk("payments")`:
 * the text streams in, the call waits, the person approves with the AI SDK's own
 * `addToolApprovalResponse`, the tool runs once and the answer streams on the same message; then a
 * second turn, rejected. Screenshots: test/artifacts/web/use-chat-*.png.
 */
const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const SHOTS = join(root, "test", "artifacts", "web");
const PAGE_DIR = join(root, "node_modules", ".cache", "jianmu-use-chat-page");

let temp: ReturnType<typeof tempDir>;
let stack: WebStack;
let browser: Browser;
let page: Page;

const poll = <T>(read: () => T | Promise<T>) => expect.poll(read, { timeout: 20_000, interval: 50 });
const chatStatus = () => page.locator('[data-testid="chat-status"]').getAttribute("data-status");
const assistant = (n: number) => page.locator('[data-role="assistant"]').nth(n);
const toolState = (n: number) => assistant(n).locator('[data-part="tool"]').getAttribute("data-state");

async function shot(name: string): Promise<void> {
  const path = join(SHOTS, `use-chat-${name}.png`);
  await page.screenshot({ path, fullPage: true });
  expect(statSync(path).size).toBeGreaterThan(5_000);
}

async function ask(text: string): Promise<void> {
  await page.locator('[data-testid="input"]').fill(text);
  await page.locator('[data-testid="send"]').click();
}

beforeAll(async () => {
  temp = tempDir();
  mkdirSync(SHOTS, { recursive: true });
  const { build } = await import("vite");
  const { default: react } = await import("@vitejs/plugin-react");
  await build({ root: join(root, "test/web/use-chat-page"), configFile: false, logLevel: "warn", plugins: [react()], build: { outDir: PAGE_DIR, emptyOutDir: true, chunkSizeWarningLimit: 2_000 } });
  stack = await startStack(join(temp.dir, "runs.db"), {}, (api, handler) => {
    const chat = toNodeListener(handler.aiSdk("payments"));
    const files = serveStatic(PAGE_DIR);
    return (req, res) => (req.url === "/api/chat" ? chat(req, res) : req.url?.startsWith("/api/") ? api(req, res) : files(req, res));
  });
  browser = await launchChromium();
  page = await browser.newPage({ viewport: { width: 1000, height: 900 } });
  await page.goto(stack.base.replace(/\/api$/, "/"));
  await page.locator('[data-testid="chat-status"]').waitFor();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await stack?.stop();
  temp?.remove();
});

describe("useChat (the AI SDK's React hook, default transport) driving a jianmu agent in Chromium", () => {
  test("streams the text, waits for approval, approves, runs the tool once and streams the answer on the same message", async () => {
    await expect(chatStatus()).resolves.toBe("ready");
    // Every text the assistant's first text part shows, as the page renders it.
    await page.evaluate(() => {
      const seen: string[] = [];
      Object.assign(window, { seen });
      new MutationObserver(() => {
        const text = document.querySelector('[data-role="assistant"] [data-part="text"]')?.textContent ?? "";
        if (text !== "" && seen[seen.length - 1] !== text) seen.push(text);
      }).observe(document.body, { subtree: true, childList: true, characterData: true });
    });
    await ask(TASK);
    await poll(() => toolState(0)).toBe("approval-requested");
    await poll(chatStatus).toBe("ready");
    const lead = "I found invoice INV-1042 over EUR 1250. I will pay it once you approve.";
    await expect(assistant(0).locator('[data-part="text"]').textContent()).resolves.toBe(lead);
    const seen = await page.evaluate(() => (window as unknown as { seen: string[] }).seen);
    expect(seen.length).toBeGreaterThanOrEqual(3);
    for (const text of seen) expect(lead.startsWith(text.trimEnd()), text).toBe(true);
    await expect(assistant(0).locator('[data-part="tool"]').getAttribute("data-tool")).resolves.toBe("pay_invoice");
    await expect(assistant(0).locator('[data-part="chart-state"]').getAttribute("data-status")).resolves.toBe("awaitingApproval");
    const runId = await assistant(0).getAttribute("data-message-id");
    await expect(fetch(`${stack.base}/runs/${runId}`).then((r) => r.json())).resolves.toMatchObject({ status: "awaitingApproval" });
    await shot("01-awaiting-approval");

    await page.locator('[data-testid="approve"]').click();
    await poll(() => toolState(0)).toBe("output-available");
    await poll(() => assistant(0).locator('[data-part="text"]').nth(1).textContent()).toBe("Done: transfer of EUR 1250 for INV-1042 sent.");
    await poll(chatStatus).toBe("ready");
    await expect(assistant(0).locator('[data-testid="tool-output"]').textContent()).resolves.toBe("transfer of EUR 1250 for INV-1042 sent");
    await expect(assistant(0).locator('[data-part="chart-state"]').getAttribute("data-status")).resolves.toBe("succeeded");
    // The answer went on in the same assistant message, the run's.
    await expect(page.locator('[data-role="assistant"]').count()).resolves.toBe(1);
    await expect(assistant(0).getAttribute("data-message-id")).resolves.toBe(runId);
    await expect(page.locator('[data-testid="error"]').count()).resolves.toBe(0);
    expect(stack.payments).toEqual([{ invoice: "INV-1042", amountEur: 1250 }]);
    await shot("02-answer");
  });

  test("a second turn goes on from the run's conversation; rejecting its call denies it and the tool never runs", async () => {
    await ask("Pay invoice INV-2001 to Globex: EUR 300.");
    await poll(() => toolState(1)).toBe("approval-requested");
    await page.locator('[data-testid="reject"]').click();
    await poll(() => toolState(1)).toBe("output-denied");
    await poll(() => assistant(1).locator('[data-part="text"]').last().textContent()).toBe("I did not pay it: Call rejected: that invoice is disputed");
    await poll(chatStatus).toBe("ready");
    await expect(assistant(1).locator('[data-part="chart-state"]').getAttribute("data-status")).resolves.toBe("succeeded");
    // The model saw the first turn, as the server recorded it.
    expect(JSON.stringify(stack.model.requests.at(-1)!.body)).toContain("transfer of EUR 1250 for INV-1042 sent");
    expect(stack.payments).toHaveLength(1);
    await shot("03-rejected");
  });
});
