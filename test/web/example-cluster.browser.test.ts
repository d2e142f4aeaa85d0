import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { Browser, Page } from "playwright-core";
import { buildWebExample, openExample } from "./browser.js";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { tempDir } from "./helpers.js";

/**
 * The web example as a cluster (examples/web/cluster.mjs): two HTTP-only replicas and one worker
 * process on one SQLite run queue, behind a round-robin proxy, in headless Chromium. The replica
 * serving the page's stream is killed with SIGKILL mid-stream; the page carries on from the other,
 * the person approves there, and the payment is made once. Screenshots: test/artifacts/web/.
 */
const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const SHOTS = join(root, "test", "artifacts", "web");

let temp: ReturnType<typeof tempDir>;
let cluster: ChildProcess | undefined;
let browser: Browser;
let page: Page;
let url: string;
const replicaPids = new Map<string, number>();
const log: string[] = [];

function startCluster(): Promise<string> {
  const child = spawn(process.execPath, [join(root, "examples/web/cluster.mjs"), "--no-build", "--port", "0", "--db", join(temp.dir, "queue.db"), "--ledger", join(temp.dir, "ledger.jsonl")], {
    cwd: root,
    env: { ...process.env, OPENAI_API_KEY: "", OPENAI_BASE_URL: "" },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  cluster = child;
  return new Promise((resolveUrl, reject) => {
    let text = "";
    child.stdout!.on("data", (chunk: Buffer) => {
      text += chunk.toString();
      log.push(chunk.toString());
      for (const [, host, pid] of text.matchAll(/replica (\S+) pid (\d+)/g)) replicaPids.set(host!, Number(pid));
      const found = /listening on (http:\/\/127\.0\.0\.1:\d+\/)/.exec(text);
      if (found) resolveUrl(found[1]!);
    });
    child.stderr!.on("data", (chunk: Buffer) => log.push(chunk.toString()));
    child.once("exit", (code) => reject(new Error(`the cluster exited (${code}) before listening:\n${log.join("")}`)));
  });
}

function ledger(): { invoice: string; amountEur: number; pid: number }[] {
  const file = join(temp.dir, "ledger.jsonl");
  return existsSync(file) ? readFileSync(file, "utf8").split("\n").filter(Boolean).map((line) => JSON.parse(line)) : [];
}

async function shot(name: string): Promise<void> {
  const path = join(SHOTS, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  expect(statSync(path).size).toBeGreaterThan(10_000);
}

const poll = <T>(read: () => T | Promise<T>) => expect.poll(read, { timeout: 20_000, interval: 50 });
const clientStatus = () => page.locator('[data-testid="client-status"]').getAttribute("data-status");

beforeAll(async () => {
  temp = tempDir();
  mkdirSync(SHOTS, { recursive: true });
  buildWebExample(root);
  url = await startCluster();
  ({ browser, page } = await openExample(url));
}, 120_000);

afterAll(async () => {
  await browser?.close();
  // The cluster and its children (its own process group).
  if (cluster?.pid) {
    try {
      process.kill(-cluster.pid, "SIGKILL");
    } catch {
      // Already gone.
    }
  }
  for (const pid of replicaPids.values()) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // Already gone.
    }
  }
  temp?.remove();
});

describe("the web example behind a round-robin proxy: two replicas, one worker", () => {
  test("the replica serving the stream is killed mid-stream; the page carries on from the other, approves there, the tool runs once", async () => {
    expect(replicaPids.size).toBe(2);
    const servedBy: { path: string; host: string }[] = [];
    page.on("response", (response) => {
      const host = response.headers()["x-served-by"];
      if (host && response.url().includes("/api/runs")) servedBy.push({ path: new URL(response.url()).pathname, host });
    });
    await page.locator('[data-testid="task"]').fill("Please pay invoice INV-4242 from Acme GmbH: EUR 420.");
    await page.locator('[data-testid="send"]').click();
    await page.locator('[data-testid="streaming"]').waitFor();
    const streamedFrom = servedBy.find((s) => s.path === "/api/runs")!.host;
    const victim = replicaPids.get(streamedFrom)!;
    process.kill(victim, "SIGKILL");
    replicaPids.delete(streamedFrom);
    await shot("cluster-01-replica-killed-mid-stream");

    // The page reconnects through the proxy to the other replica and sees the rest of the run.
    await poll(clientStatus).toBe("awaitingApproval");
    const survivor = [...replicaPids.keys()][0]!;
    expect(servedBy.some((s) => s.path.endsWith("/stream") && s.host === survivor)).toBe(true);
    const lead = "I found invoice INV-4242 over EUR 420. I will pay it once you approve.";
    // Every word once: the text before and after the kill joined without a gap or a repeat.
    await expect(page.locator('[data-message-role="assistant"]').first().textContent()).resolves.toBe(lead);
    await shot("cluster-02-awaiting-approval-on-the-other-replica");

    await page.locator('[data-testid="approve"]').click();
    await poll(() => page.locator('[data-testid="final-answer"]').textContent()).toContain("Done: transfer of EUR 420 for INV-4242 sent.");
    await poll(clientStatus).toBe("done");
    expect(servedBy.filter((s) => s.path.endsWith("/events")).map((s) => s.host)).toEqual([survivor]);
    await shot("cluster-03-answer");
    expect(ledger().map(({ invoice, amountEur }) => ({ invoice, amountEur }))).toEqual([{ invoice: "INV-4242", amountEur: 420 }]);
  }, 90_000);
});
