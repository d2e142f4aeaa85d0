import { existsSync, mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createActor } from "xstate";
import { maxLength } from "../../actors/guardrails-builtin.js";
import { human } from "../../actors/messages.js";
import type { AgentOutput } from "../../machines/contract/context.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import { RunRecorder } from "../../visualize/recorder.js";
import { writeViewer } from "../../visualize/viewer.js";

/**
 * The run viewer of a priced run whose output guardrail sent feedback once (issue 33): the cost
 * card, the guardrail's mark on the model lane, and GuardingOutput among the chart's states.
 */
const OUT = resolve("test-output", "visualize", "guardrails");
const CHROMIUM = "/usr/bin/chromium";

async function recordGuardedRun(path: string): Promise<AgentOutput> {
  const modelClient = scriptedModel([
    { content: "a far too long answer", usage: { promptTokens: 100, completionTokens: 20 } },
    { content: "short", usage: { promptTokens: 150, completionTokens: 2 } },
  ]);
  const machine = createReactMachine({
    modelClient,
    outputGuardrails: [maxLength(10, { name: "brevity", onHit: "retry" })],
    config: { pricing: { scripted: { input: 2, output: 8 } } },
    configFile: false,
  });
  const recorder = new RunRecorder({ path, machine });
  const actor = createActor(machine, { input: { messages: [human("answer briefly")] }, inspect: (event) => recorder.record(event) });
  recorder.attach(actor);
  const output = await new Promise<AgentOutput>((done, fail) => {
    actor.subscribe({ complete: () => done(actor.getSnapshot().output as AgentOutput), error: fail });
    actor.start();
  });
  await new Promise((settle) => setTimeout(settle, 0));
  await recorder.close();
  return output;
}

describe("the run viewer of a guarded, priced run", () => {
  let browser: Browser;
  let page: Page;
  const html = join(OUT, "run.html");

  beforeAll(async () => {
    mkdirSync(OUT, { recursive: true });
    const recording = join(OUT, "run.jsonl");
    const output = await recordGuardedRun(recording);
    expect(output.status).toBe("succeeded");
    await writeViewer(recording, html);
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium`);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"],
    });
    page = await browser.newPage({ viewport: { width: 1500, height: 1000 } });
    await page.goto(pathToFileURL(html).href);
  });

  afterAll(async () => {
    await browser?.close();
  });

  test("the cost card shows the run's cost in the pricing's units", async () => {
    // 250 prompt tokens at 2 and 22 completion tokens at 8 per million.
    const expected = (250 * 2 + 22 * 8) / 1_000_000;
    await expect(page.locator('[data-summary="cost"]').getAttribute("data-value")).resolves.toBe(String(expected));
  });

  test("the guardrail's feedback is a mark on the timeline, naming it", async () => {
    const marker = page.locator('[data-marker="guardrail"]');
    await expect(marker.count()).resolves.toBe(1);
    await expect(marker.getAttribute("data-name")).resolves.toBe("brevity");
    await expect(marker.locator("title").textContent()).resolves.toContain("output guardrail sent feedback");
  });

  test("the chart draws GuardingOutput", async () => {
    await expect(page.locator('[data-state$="GuardingOutput"]').count()).resolves.toBeGreaterThan(0);
    await page.screenshot({ path: join(OUT, "viewer.png"), fullPage: true });
  });
});
