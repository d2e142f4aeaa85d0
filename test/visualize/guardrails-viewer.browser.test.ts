import { join, resolve } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { maxLength } from "../../actors/guardrails-builtin.js";
import { human } from "../../actors/messages.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import { recordRun, viewRun } from "./viewer-page.js";

/**
 * The run viewer of a priced run whose output guardrail sent feedback once (issue 33): the cost
 * card, the guardrail's mark on the model lane, and GuardingOutput among the chart's states.
 */
const OUT = resolve("test-output", "visualize", "guardrails");

function guardedAgent() {
  const modelClient = scriptedModel([
    { content: "a far too long answer", usage: { promptTokens: 100, completionTokens: 20 } },
    { content: "short", usage: { promptTokens: 150, completionTokens: 2 } },
  ]);
  return createReactMachine({
    modelClient,
    outputGuardrails: [maxLength(10, { name: "brevity", onHit: "retry" })],
    config: { pricing: { scripted: { input: 2, output: 8 } } },
    configFile: false,
  });
}

describe("the run viewer of a guarded, priced run", () => {
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    let output;
    ({ browser, page, output } = await viewRun(OUT, (recording) => recordRun(guardedAgent(), { messages: [human("answer briefly")] }, recording)));
    expect(output.status).toBe("succeeded");
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
