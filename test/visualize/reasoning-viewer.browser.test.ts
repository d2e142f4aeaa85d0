import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { z } from "zod";
import { human } from "../../actors/messages.js";
import { resolveModelClient } from "../../actors/openai/openai-model-client.js";
import type { AgentOutput } from "../../machines/contract/context.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { startOpenAIServer, type OpenAIServer } from "../../testing/openai-server.js";
import { replayRecording } from "../../testing/recordings.js";
import { defineTool } from "../../tools/tool.js";
import { analyzeRecording } from "../../visualize/analysis.js";
import { recordRun, viewRun } from "./viewer-page.js";

/**
 * The run viewer of a reasoning model's run over the Responses API (a real gpt-5.1-codex-max run
 * recorded by vercel/ai, replayed over HTTP): the reasoning summary shows where the text does, on
 * the assistant message that came with it and on its model call, and the token card shows the
 * cached and reasoning shares. A recording made without prompt text keeps none of the reasoning.
 */
const OUT = resolve("test-output", "visualize", "reasoning");
const FIXTURE = fileURLToPath(new URL("../fixtures/openai/vercel-ai/openai-responses/openai-reasoning-encrypted-content.1.chunks.txt", import.meta.url));
const SUMMARY_START = "**Calculating step-by-step using calculator**";

const calculator = defineTool({
  name: "calculator",
  description: "A minimal calculator for basic arithmetic.",
  parameters: z.object({ a: z.number(), b: z.number(), op: z.enum(["add", "subtract", "multiply", "divide"]) }),
  execute: ({ a, b, op }) => (op === "add" ? a + b : op === "subtract" ? a - b : op === "multiply" ? a * b : a / b),
});

async function recordReasoningRun(path: string, omitText: boolean): Promise<AgentOutput> {
  const server: OpenAIServer = await startOpenAIServer({ respond: replayRecording(FIXTURE) });
  try {
    const modelClient = resolveModelClient({ baseURL: server.baseURL, apiKey: "test-key", model: "gpt-5.1-codex-max", api: "responses", reasoning: { effort: "high", summary: "detailed" } });
    const machine = createReactMachine({ modelClient, tools: [calculator], configFile: false });
    return await recordRun(machine, { messages: [human("Compute (12 + 7) * 3 * 10 step by step.")] }, path, { omitText });
  } finally {
    await server.close();
  }
}

describe("the run viewer of a reasoning model's run", () => {
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    let output;
    ({ browser, page, output } = await viewRun(OUT, (recording) => recordReasoningRun(recording, false)));
    expect(output.status).toBe("succeeded");
  });

  afterAll(async () => {
    await browser?.close();
  });

  test("the assistant message that came with the reasoning shows its summary, folded", async () => {
    const reasoning = page.locator("[data-role=assistant] details[data-reasoning]");
    await expect(reasoning.count()).resolves.toBe(1);
    await expect(reasoning.getAttribute("open")).resolves.toBeNull();
    await reasoning.locator("summary").click();
    await expect(reasoning.locator(".body").innerText()).resolves.toMatch(/^\*\*Calculating step-by-step using calculator\*\*\n\nI'll compute 12 plus 7/);
    await page.screenshot({ path: join(OUT, "viewer.png"), fullPage: true });
  });

  test("the first model call's entry carries the reasoning as it streamed; the others none", async () => {
    const tips = await page.locator('[data-timeline-entry][data-kind="model"] title').allTextContents();
    expect(tips).toHaveLength(4);
    expect(tips[0]).toContain(`reasoning: ${SUMMARY_START}`);
    for (const tip of tips.slice(1)) expect(tip).not.toContain("reasoning:");
  });

  test("the token card shows the cached and reasoning shares the server reported", async () => {
    // The four replies' usage, summed: 914 in (0 cached), 92 out (0 reasoning).
    await expect(page.locator('[data-summary="tokens"] .s').innerText()).resolves.toBe("914 in (0 cached) · 92 out (0 reasoning)");
  });

  test("a recording without prompt text keeps none of the reasoning", async () => {
    const recording = join(OUT, "run-no-text.jsonl");
    await recordReasoningRun(recording, true);
    const text = readFileSync(recording, "utf8");
    expect(text).not.toContain("Calculating step-by-step");
    expect(text).not.toContain("gAAAAAB");
    expect(text).toContain("‹omitted reasoning items›");
    const analysis = await analyzeRecording(recording);
    expect(analysis.messages.filter((message) => message.reasoning !== undefined)).toEqual([]);
  });
});
