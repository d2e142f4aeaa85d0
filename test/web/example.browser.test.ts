import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import type { Browser, Page } from "playwright-core";
import { buildWebExample, openExample } from "./browser.js";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { tempDir } from "./helpers.js";

/**
 * The web example (examples/web: Vite + React + useAgent, agentHandler on Node's http server with
 * a SQLite store) in headless Chromium. The server is a real child process, killed with SIGKILL
 * and started again while a run waits for approval. Screenshots of every step: test/artifacts/web/.
 */
const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const SHOTS = join(root, "test", "artifacts", "web");
const AWAITING = "PaymentsAssistant.Evaluating.ChildRunning.ToolExecutor.AwaitingApproval";

let temp: ReturnType<typeof tempDir>;
let server: ChildProcess | undefined;
let browser: Browser;
let page: Page;
let url: string;
let port = 0;
const serverLog: string[] = [];

/** Start examples/web/start.mjs (already built) and wait for its "listening on" line. */
function startServer(): Promise<string> {
  const child = spawn(
    process.execPath,
    [join(root, "examples/web/start.mjs"), "--no-build", "--port", String(port), "--db", join(temp.dir, "runs.db"), "--ledger", join(temp.dir, "ledger.jsonl")],
    { cwd: root, env: { ...process.env, OPENAI_API_KEY: "", OPENAI_BASE_URL: "" }, stdio: ["ignore", "pipe", "pipe"] },
  );
  server = child;
  return listening(child);
}

/** The URL a started example server prints. */
function listening(child: ChildProcess): Promise<string> {
  return new Promise((resolveUrl, reject) => {
    const onData = (chunk: Buffer) => {
      const text = chunk.toString();
      serverLog.push(text);
      const found = /listening on (http:\/\/127\.0\.0\.1:(\d+)\/)/.exec(text);
      if (found) {
        if (child === server) port = Number(found[2]);
        resolveUrl(found[1]!);
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", (chunk: Buffer) => serverLog.push(chunk.toString()));
    child.once("exit", (code) => reject(new Error(`the example server exited (${code}) before listening:\n${serverLog.join("")}`)));
  });
}

async function killServer(): Promise<void> {
  const child = server!;
  const exited = new Promise((done) => child.once("exit", done));
  child.kill("SIGKILL");
  await exited;
  server = undefined;
}

async function shot(name: string): Promise<void> {
  const path = join(SHOTS, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  expect(statSync(path).size).toBeGreaterThan(10_000);
}

/** Waits for what the page shows; generous, since the whole suite may share the machine's cores. */
const poll = <T>(read: () => T | Promise<T>) => expect.poll(read, { timeout: 20_000, interval: 50 });
const statusPill = () => page.locator('[data-testid="client-status"]');
const clientStatus = () => statusPill().getAttribute("data-status");
const stateClass = (id: string) => page.locator(`[data-testid="statechart"] [data-state="${id}"]`).first().getAttribute("class");

async function ask(task: string): Promise<void> {
  await page.locator('[data-testid="task"]').fill(task);
  await page.locator('[data-testid="send"]').click();
}

function ledger(): { invoice: string; amountEur: number; pid: number }[] {
  const file = join(temp.dir, "ledger.jsonl");
  return existsSync(file) ? readFileSync(file, "utf8").split("\n").filter(Boolean).map((line) => JSON.parse(line)) : [];
}

beforeAll(async () => {
  temp = tempDir();
  mkdirSync(SHOTS, { recursive: true });
  buildWebExample(root);
  url = await startServer();
  ({ browser, page } = await openExample(url));
}, 120_000);

afterAll(async () => {
  await browser?.close();
  if (server) await killServer();
  temp?.remove();
});

describe("the web example in Chromium", () => {
  test("types a task, sees the text stream in, approves, sees the answer", async () => {
    await expect(clientStatus()).resolves.toBe("idle");
    // Note every text the streaming bubble shows and every status the page passes through, as it renders them.
    await page.evaluate(() => {
      const seen: string[] = [];
      const statuses: string[] = [];
      Object.assign(window, { streamed: seen, statuses });
      new MutationObserver(() => {
        const text = document.querySelector('[data-testid="streaming"]')?.textContent ?? "";
        if (text !== "" && seen[seen.length - 1] !== text) seen.push(text);
        const status = document.querySelector('[data-testid="client-status"]')?.getAttribute("data-status") ?? "";
        if (statuses[statuses.length - 1] !== status) statuses.push(status);
      }).observe(document.body, { subtree: true, childList: true, characterData: true, attributes: true });
    });
    await ask("Please pay invoice INV-1042 from Acme GmbH: EUR 1,250.");
    const streaming = page.locator('[data-testid="streaming"]');
    await streaming.waitFor();
    await shot("01-text-streaming");

    const approval = page.locator('[data-testid="approval"]');
    await approval.waitFor();
    await expect(approval.textContent()).resolves.toContain("pay_invoice");
    await expect(approval.textContent()).resolves.toContain("payments need a second pair of eyes");
    await poll(clientStatus).toBe("awaitingApproval");
    await poll(() => stateClass(AWAITING)).toContain("current");
    const lead = "I found invoice INV-1042 over EUR 1250. I will pay it once you approve.";
    await expect(page.locator('[data-message-role="assistant"]').first().textContent()).resolves.toBe(lead);
    // The sentence grew on the page piece by piece: several ever longer beginnings of it.
    const streamed = await page.evaluate(() => (window as unknown as { streamed: string[] }).streamed);
    expect(streamed.length).toBeGreaterThanOrEqual(3);
    streamed.forEach((text, i) => {
      expect(lead.startsWith(text.trimEnd()), text).toBe(true);
      if (i > 0) expect(text.length).toBeGreaterThan(streamed[i - 1]!.length);
    });
    await shot("02-awaiting-approval");

    await page.locator('[data-testid="approve"]').click();
    const answer = page.locator('[data-testid="final-answer"]');
    await answer.waitFor();
    await poll(() => answer.textContent()).toContain("Done: transfer of EUR 1250 for INV-1042 sent.");
    await poll(clientStatus).toBe("done");
    await poll(() => stateClass("PaymentsAssistant.Succeeded")).toContain("current");
    await expect(stateClass(AWAITING)).resolves.toMatch(/visited/);
    await expect(page.locator('[data-testid="tool-call"]').getAttribute("data-status")).resolves.toBe("completed");
    // The answer came as many deltas, and the page counted them.
    await expect(page.locator('[data-testid="conversation"]').getAttribute("data-deltas").then(Number)).resolves.toBeGreaterThan(10);
    await expect(page.locator('[data-testid="usage"]').getAttribute("data-total-tokens")).resolves.toBe("450");
    await shot("03-answer");
    const statuses = await page.evaluate(() => (window as unknown as { statuses: string[] }).statuses);
    expect(statuses.filter((s) => s !== "idle" && s !== "connecting")).toEqual(["streaming", "awaitingApproval", "streaming", "done"]);
    expect(ledger().map(({ invoice, amountEur }) => ({ invoice, amountEur }))).toEqual([{ invoice: "INV-1042", amountEur: 1250 }]);
  });

  test("reloads the page while a call waits for approval, edits its arguments and approves it", async () => {
    await ask("Pay invoice INV-2001 to Globex: EUR 300.");
    await page.locator('[data-testid="approval"]').waitFor();
    await poll(clientStatus).toBe("awaitingApproval");
    const runUrl = page.url();
    expect(runUrl).toMatch(/\?run=[\w-]+$/);
    await shot("04-before-reload");

    await page.reload();
    await poll(clientStatus).toBe("awaitingApproval");
    expect(page.url()).toBe(runUrl);
    await expect(page.locator('[data-message-role="user"]').textContent()).resolves.toBe("Pay invoice INV-2001 to Globex: EUR 300.");
    await expect(page.locator('[data-message-role="assistant"]').count()).resolves.toBe(1);
    await expect(page.locator('[data-testid="streaming"]').count()).resolves.toBe(0);
    await poll(() => stateClass(AWAITING)).toContain("current");
    const args = page.locator('[data-testid="approval-args"]');
    expect(JSON.parse((await args.inputValue()) || "{}")).toEqual({ invoice: "INV-2001", amountEur: 300 });
    await args.fill(JSON.stringify({ invoice: "INV-2001", amountEur: 299 }, null, 2));
    await expect(page.locator('[data-testid="approve"]').textContent()).resolves.toBe("Approve edited call");
    await shot("05-after-reload-edited");

    await page.locator('[data-testid="approve"]').click();
    await poll(() => page.locator('[data-testid="final-answer"]').textContent()).toContain("Done: transfer of EUR 299 for INV-2001 sent.");
    await shot("06-edited-answer");
    expect(ledger().slice(1).map(({ invoice, amountEur }) => ({ invoice, amountEur }))).toEqual([{ invoice: "INV-2001", amountEur: 299 }]);
  });

  test("the server is killed while a call waits; the page reconnects to the restarted server and finishes the run", async () => {
    await ask("Pay invoice INV-3003 to Initech: EUR 75.");
    await page.locator('[data-testid="approval"]').waitFor();
    await poll(clientStatus).toBe("awaitingApproval");
    const firstPid = server!.pid;

    await killServer();
    await poll(clientStatus).toBe("reconnecting");
    await shot("07-server-killed");

    const again = await startServer();
    expect(again).toBe(url);
    await poll(clientStatus).toBe("awaitingApproval");
    await poll(() => stateClass(AWAITING)).toContain("current");
    await shot("08-reconnected-to-new-server");

    await page.locator('[data-testid="approve"]').click();
    await poll(() => page.locator('[data-testid="final-answer"]').textContent()).toContain("Done: transfer of EUR 75 for INV-3003 sent.");
    await poll(clientStatus).toBe("done");
    await shot("09-finished-after-restart");
    // Paid once, by the new process.
    const paid = ledger();
    expect(paid.map(({ invoice, amountEur }) => ({ invoice, amountEur }))).toEqual([
      { invoice: "INV-1042", amountEur: 1250 },
      { invoice: "INV-2001", amountEur: 299 },
      { invoice: "INV-3003", amountEur: 75 },
    ]);
    expect(paid[2]!.pid).toBe(server!.pid);
    expect(paid[2]!.pid).not.toBe(firstPid);
  });

  test("rejects a call: nothing is paid and the agent says so", async () => {
    await ask("Pay invoice INV-4004 to Umbrella: EUR 10.");
    await page.locator('[data-testid="approval"]').waitFor();
    await page.locator('[data-testid="reject"]').click();
    await poll(() => page.locator('[data-testid="final-answer"]').textContent()).toMatch(/I did not pay it: .*rejected from the page/);
    await expect(page.locator('[data-testid="tool-call"]').getAttribute("data-status")).resolves.toBe("denied");
    await expect(page.locator('[data-testid="approval"]').count()).resolves.toBe(0);
    await shot("10-rejected");
    expect(ledger().map((p) => p.invoice)).toEqual(["INV-1042", "INV-2001", "INV-3003"]);
  });

  test("attaches a photo: the page shows it, the model is sent it, and after a restart the run still has it", async () => {
    // A real PNG: a screenshot of the page itself.
    const photo = await page.screenshot({ clip: { x: 0, y: 0, width: 320, height: 200 } });
    const size = photo.length < 1024 ? `${photo.length} bytes` : `${(photo.length / 1024).toFixed(1)} KB`;
    await page.locator('[data-testid="attach"]').setInputFiles({ name: "invoice.png", mimeType: "image/png", buffer: photo });
    await page.locator('[data-testid="attachment"] img').waitFor();
    await ask("Pay the invoice in the photo: INV-5005 from Hooli, EUR 42.");
    await expect(page.locator('[data-testid="attachment"]').count()).resolves.toBe(0);
    const shown = page.locator('[data-message-role="user"] [data-testid="message-image"]');
    await shown.waitFor();
    await expect(shown.getAttribute("src")).resolves.toBe(`data:image/png;base64,${photo.toString("base64")}`);
    // The image really loaded in the page (a broken one has no natural width).
    await poll(() => shown.evaluate((img) => (img as HTMLImageElement).naturalWidth)).toBe(320);
    await page.locator('[data-testid="approval"]').waitFor();
    // The scripted model names the image it was sent, by size: the bytes reached it.
    await poll(() => page.locator('[data-message-role="assistant"]').first().textContent()).toBe(
      `I see the photo you attached (${size}). I found invoice INV-5005 over EUR 42. I will pay it once you approve.`,
    );
    await shot("11-photo-attached");

    // The restarted server reads the run from SQLite, where the photo is kept apart from the checkpoint.
    await killServer();
    const db = new Database(join(temp.dir, "runs.db"), { readonly: true });
    const bodies = db.prepare<[], { body: string }>("SELECT body FROM jianmu_checkpoints").all().map((row) => row.body);
    const blobs = db.prepare<[], { media_type: string; data: Buffer }>("SELECT media_type, data FROM jianmu_blobs").all();
    db.close();
    expect(bodies.some((body) => body.includes(photo.toString("base64").slice(0, 200)))).toBe(false);
    expect(blobs).toEqual([{ media_type: "image/png", data: photo }]);
    await poll(clientStatus).toBe("reconnecting");
    await startServer();
    await poll(clientStatus).toBe("awaitingApproval");
    await poll(() => shown.getAttribute("src")).toBe(`data:image/png;base64,${photo.toString("base64")}`);
    await page.locator('[data-testid="approve"]').click();
    await poll(() => page.locator('[data-testid="final-answer"]').textContent()).toContain(`Done: transfer of EUR 42 for INV-5005 sent. The photo (${size}) is filed with it.`);
    await shot("12-photo-run-finished-after-restart");
    expect(ledger().filter((p) => p.invoice === "INV-5005").map(({ amountEur }) => amountEur)).toEqual([42]);
  });

  test("a run whose model call fails: a red failed status, and the reason on the page", async () => {
    // The live path against `jianmu serve`, which knows no payments task: the model call ends in a 404.
    const serve = spawn(process.execPath, [join(root, "dist/cli/main.js"), "serve"], { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
    const failing = { serve, example: undefined as ChildProcess | undefined };
    try {
      const baseURL = await new Promise<string>((resolveUrl) => {
        let out = "";
        serve.stdout!.on("data", (chunk: Buffer) => {
          out += chunk.toString();
          const found = /OPENAI_BASE_URL=(\S+)/.exec(out);
          if (found) resolveUrl(found[1]!);
        });
      });
      failing.example = spawn(process.execPath, [join(root, "examples/web/start.mjs"), "--no-build", "--port", "0", "--db", join(temp.dir, "failing.db")], {
        cwd: root,
        env: { ...process.env, OPENAI_API_KEY: "", OPENAI_BASE_URL: baseURL },
        stdio: ["ignore", "pipe", "pipe"],
      });
      const failingUrl = await listening(failing.example);
      const other = await browser.newPage({ viewport: { width: 1500, height: 1000 } });
      await other.goto(failingUrl);
      await other.locator('[data-testid="task"]').fill("Pay invoice INV-5005 to Hooli: EUR 20.");
      await other.locator('[data-testid="send"]').click();
      const answer = other.locator('[data-testid="final-answer"]');
      await answer.waitFor({ timeout: 20_000 });
      await expect(answer.getAttribute("data-status")).resolves.toBe("failed");
      await poll(() => answer.textContent()).toMatch(/The run failed \(modelError\).*jianmu serve replays only these tasks/);
      const pill = other.locator('[data-testid="client-status"]');
      await poll(() => pill.getAttribute("data-shown")).toBe("failed");
      await expect(pill.textContent()).resolves.toBe("failed");
      await expect(pill.getAttribute("class")).resolves.toContain("status-failed");
      await other.screenshot({ path: join(SHOTS, "13-failed-run.png"), fullPage: true });
      await other.close();
    } finally {
      failing.example?.kill("SIGKILL");
      serve.kill("SIGTERM");
    }
  });
});
