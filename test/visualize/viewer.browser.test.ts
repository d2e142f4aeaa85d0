import { mkdirSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { type Browser, type Page } from "playwright-core";
import { launchChromium } from "../chromium.js";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { describeMachine } from "../../visualize/chart.js";
import { writeViewer } from "../../visualize/viewer.js";
import { approvalMachine, FIXTURE_CALLS, recordApprovalRun } from "./approval-run.js";

/**
 * The viewer of a real recorded run (two tool rounds, one approval), opened in headless Debian
 * Chromium: what the DOM says must be what the run did. A screenshot is kept under test-output/.
 */
const OUT = resolve("test-output", "visualize", "viewer");
const ROOT = "ReActAgent";

describe("the run viewer in Chromium", () => {
  let browser: Browser;
  let page: Page;
  const requests: string[] = [];
  const html = join(OUT, "run.html");
  const chart = describeMachine(approvalMachine());
  const transition = (source: string, target: string) => {
    const found = chart.transitions.find((t) => t.source === `${ROOT}.${source}` && t.targets.includes(`${ROOT}.${target}`));
    if (!found) throw new Error(`no transition ${source} → ${target} in the chart`);
    return found.id;
  };

  beforeAll(async () => {
    mkdirSync(OUT, { recursive: true });
    const recording = join(OUT, "run.jsonl");
    const run = await recordApprovalRun(recording);
    expect(run.output.status).toBe("succeeded");
    const written = await writeViewer(recording, html);
    expect(written).toMatchObject({ outPath: html, status: "succeeded" });
    expect(statSync(html).size).toBe(written.bytes);
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1500, height: 1000 } });
    // Every request the page makes is noted (and anything but the file itself refused).
    await page.route("**/*", (route) => {
      requests.push(route.request().url());
      return route.request().url().startsWith("file:") ? route.continue() : route.abort();
    });
    await page.goto(pathToFileURL(html).href);
  });

  afterAll(async () => {
    await browser?.close();
  });

  test("is one self-contained file: nothing is loaded besides it", async () => {
    expect(requests).toEqual([pathToFileURL(html).href]);
    const text = readFileSync(html, "utf8");
    expect(text).not.toMatch(/<(script|link|img)[^>]+(src|href)=/i);
    expect(text).toContain("Content-Security-Policy");
  });

  test("shows how often the run entered each state, eventless steps included", async () => {
    const expected: Record<string, number> = {
      Initialising: 1,
      Evaluating: 3,
      "Evaluating.CheckAbort": 3,
      "Evaluating.ChildRunning": 3,
      "Evaluating.ChildRunning.AgentLLM": 3,
      "Evaluating.ChildRunning.ToolExecutor": 2,
      "Evaluating.ChildRunning.ToolExecutor.Preflight": 2,
      "Evaluating.ChildRunning.ToolExecutor.AwaitingApproval": 1,
      "Evaluating.ChildRunning.ToolExecutor.Executing": 2,
      "Evaluating.ChildRunning.StateCondition": 3,
      CheckBudget: 2,
      Retry: 2,
      Succeeded: 1,
      Failed: 0,
    };
    for (const [path, visits] of Object.entries(expected)) {
      const state = page.locator(`#statechart [data-state="${ROOT}.${path}"]`);
      await expect(state.getAttribute("data-visits"), path).resolves.toBe(String(visits));
      await expect(state.getAttribute("class"), path).resolves.toContain(visits > 0 ? "visited" : "idle");
    }
    // Every state of the machine is drawn, as a box with a size.
    await expect(page.locator("#statechart [data-state]").count()).resolves.toBe(15);
    const box = await page.locator(`#statechart [data-state="${ROOT}.CheckBudget"] rect.frame`).boundingBox();
    expect(box && box.width > 50 && box.height > 20).toBe(true);
  });

  test("shows the transitions taken and how often", async () => {
    const count = (id: string) => page.locator(`#statechart [data-transition="${id}"]`).first().getAttribute("data-count");
    await expect(count(transition("Evaluating.CheckAbort", "Evaluating.ChildRunning"))).resolves.toBe("3");
    await expect(count(transition("Evaluating.ChildRunning.StateCondition", "CheckBudget"))).resolves.toBe("2");
    await expect(count(transition("Evaluating.ChildRunning.StateCondition", "Succeeded"))).resolves.toBe("1");
    await expect(count(transition("CheckBudget", "Retry"))).resolves.toBe("2");
    await expect(count(transition("Retry", "Evaluating"))).resolves.toBe("2");
    await expect(count(transition("Evaluating.ChildRunning.ToolExecutor.Preflight", "Evaluating.ChildRunning.ToolExecutor.AwaitingApproval"))).resolves.toBe("1");
    await expect(count(transition("Evaluating.ChildRunning.ToolExecutor.AwaitingApproval", "Evaluating.ChildRunning.ToolExecutor.Executing"))).resolves.toBe("1");
    await expect(count(transition("CheckBudget", "Failed"))).resolves.toBe("0");
    await expect(count(`${ROOT}.Evaluating.ChildRunning.ToolExecutor.AwaitingApproval#guard.approve#0`)).resolves.toBe("1");
    // Arrows of taken transitions are drawn solid, the others not.
    await expect(page.locator("#statechart .edge.taken").count()).resolves.toBeGreaterThan(8);
    await expect(page.locator(`#statechart .edge[data-transition="${transition("CheckBudget", "Failed")}"]`).getAttribute("class")).resolves.toContain("idle");
  });

  test("draws the path through the chart, marking eventless steps", async () => {
    const steps = await page.locator("[data-step]").evaluateAll((els) => els.map((el) => `${el.getAttribute("data-step")!.split(".").pop()}${el.classList.contains("eventless") ? "*" : ""}`));
    expect(steps).toEqual([
      "Initialising",
      "CheckAbort*", "AgentLLM", "Preflight", "Executing", "StateCondition*", "CheckBudget*", "Retry*",
      "CheckAbort*", "AgentLLM", "Preflight", "AwaitingApproval", "Executing", "StateCondition*", "CheckBudget*", "Retry*",
      "CheckAbort*", "AgentLLM", "StateCondition*", "Succeeded",
    ]);
    await expect(page.locator("[data-pass]").count()).resolves.toBe(3);
  });

  test("has a timeline of model calls, tool calls and the approval with durations and tokens", async () => {
    const entries = await page.locator("#timeline [data-timeline-entry]").evaluateAll((els) =>
      els.map((el) => ({
        id: el.getAttribute("data-timeline-entry"),
        kind: el.getAttribute("data-kind"),
        name: el.getAttribute("data-name"),
        status: el.getAttribute("data-status"),
        tokens: el.getAttribute("data-tokens"),
        duration: Number(el.getAttribute("data-duration-ms")),
        width: (el.querySelector("rect") as SVGRectElement).getBBox().width,
      })),
    );
    expect(entries.filter((e) => e.kind === "model").map((e) => e.tokens)).toEqual(["204", "281", "328"]);
    expect(entries.filter((e) => e.kind === "tool").map((e) => `${e.id}:${e.name}:${e.status}`)).toEqual([
      `${FIXTURE_CALLS.add}:add:ok`,
      `${FIXTURE_CALLS.multiply}:multiply:ok`,
      `${FIXTURE_CALLS.note}:save_note:ok`,
    ]);
    expect(entries.filter((e) => e.kind === "approval").map((e) => `${e.id}:${e.name}:${e.status}`)).toEqual([`${FIXTURE_CALLS.note}:save_note:approved`]);
    for (const e of entries) {
      expect(e.duration, e.id ?? "").toBeGreaterThan(0);
      expect(e.width, e.id ?? "").toBeGreaterThan(2);
    }
    // The approval came before the note was written, and the note after the model asked for it.
    const at = (kind: string, name: string) => page.locator(`#timeline [data-kind="${kind}"][data-name="${name}"]`).getAttribute("data-start-ms").then(Number);
    expect(await at("approval", "save_note")).toBeLessThan(await at("tool", "save_note"));
    await expect(page.locator("#timeline [data-iteration]").count()).resolves.toBeGreaterThan(3);
    await expect(page.locator("table.calls [data-entry-row]").count()).resolves.toBe(7);
    // A click on a bar points at its row.
    await page.locator(`#timeline [data-kind="approval"]`).click();
    await expect(page.locator(`[data-entry-row="${FIXTURE_CALLS.note}"][data-kind="approval"]`).getAttribute("class")).resolves.toContain("focus");
  });

  test("shows the run's summary and the messages", async () => {
    await expect(page.locator("#run-status").getAttribute("data-status")).resolves.toBe("succeeded");
    const summary = async (key: string) => page.locator(`[data-summary="${key}"]`).getAttribute("data-value");
    await expect(summary("iterations")).resolves.toBe("3");
    await expect(summary("model-calls")).resolves.toBe("3");
    await expect(summary("tool-calls")).resolves.toBe("3");
    await expect(summary("approvals")).resolves.toBe("1");
    await expect(summary("tokens")).resolves.toBe("813");
    await expect(page.locator("[data-message]").evaluateAll((els) => els.map((el) => el.getAttribute("data-role")))).resolves.toEqual([
      "user",
      "assistant",
      "tool",
      "assistant",
      "tool",
      "tool",
      "assistant",
    ]);
    await expect(page.locator(`[data-tool-call="${FIXTURE_CALLS.note}"]`).textContent()).resolves.toContain("save_note");
    await expect(page.locator("#final-answer").textContent()).resolves.toContain("(2 + 3) * 4 = 20");
  });

  test("saves a screenshot of the whole page", async () => {
    const shot = join(OUT, "viewer.png");
    await page.screenshot({ path: shot, fullPage: true });
    expect(statSync(shot).size).toBeGreaterThan(50_000);
  });
});
