import { mkdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { createActor } from "xstate";
import { type Browser, type Page } from "playwright-core";
import { launchChromium } from "../chromium.js";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { z } from "zod";
import { human } from "../../actors/messages.js";
import { toolContent } from "../../actors/tool-content.js";
import type { AgentOutput } from "../../machines/contract/context.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import { defineTool } from "../../tools/tool.js";
import { RunRecorder } from "../../visualize/recorder.js";
import { writeViewer } from "../../visualize/viewer.js";

/**
 * Images in the run viewer: a recorded run whose user turn carries a photo and whose tool returns
 * a screenshot (and an image by URL) is opened in headless Chromium. The images given as bytes are
 * shown from the file itself; the one by URL is named, never fetched (the page makes no requests).
 */
const OUT = resolve("test-output", "visualize", "viewer-images");

describe("images in the run viewer, in Chromium", () => {
  let browser: Browser;
  let page: Page;
  const requests: string[] = [];
  const html = join(OUT, "run.html");
  let photo: Buffer;
  let screen: Buffer;

  beforeAll(async () => {
    mkdirSync(OUT, { recursive: true });
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    // Two real PNGs, drawn by the browser: a red 64×40 and a blue 48×30.
    await page.setContent(`<div style="width:64px;height:40px;background:#d11"></div><div style="width:48px;height:30px;background:#12d"></div>`);
    photo = await page.screenshot({ clip: { x: 8, y: 8, width: 64, height: 40 } });
    screen = await page.screenshot({ clip: { x: 8, y: 48, width: 48, height: 30 } });

    const takeScreenshot = defineTool({
      name: "screenshot",
      description: "Look at the screen.",
      parameters: z.object({}),
      execute: () => toolContent([{ type: "text", text: "the screen now" }, { type: "image", data: screen.toString("base64"), mediaType: "image/png" }, { type: "image", url: "https://example.com/elsewhere.png" }]),
    });
    const machine = createReactMachine({
      modelClient: scriptedModel([{ toolCalls: [{ id: "shot_1", name: "screenshot", arguments: {} }] }, { content: "A red card, and a blue button on the screen." }]),
      tools: [takeScreenshot],
      configFile: false,
    });
    const recording = join(OUT, "run.jsonl");
    const recorder = new RunRecorder({ path: recording, machine });
    const actor = createActor(machine, {
      input: { messages: [human([{ type: "text", text: "What do you see?" }, { type: "image", data: photo.toString("base64"), mediaType: "image/png" }])] },
      inspect: (event) => recorder.record(event),
    });
    recorder.attach(actor);
    const output = await new Promise<AgentOutput>((done, fail) => {
      actor.subscribe({ complete: () => done(actor.getSnapshot().output as AgentOutput), error: fail });
      actor.start();
    });
    expect(output.status).toBe("succeeded");
    await new Promise((done) => setTimeout(done, 0));
    await recorder.close();
    await writeViewer(recording, html);

    await page.route("**/*", (route) => {
      requests.push(route.request().url());
      return route.request().url().startsWith("file:") ? route.continue() : route.abort();
    });
    await page.goto(pathToFileURL(html).href);
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
  });

  test("shows the user's photo and the tool's screenshot from the file itself, at their real size", async () => {
    const user = page.locator('[data-role="user"] img[data-part-image]');
    const tool = page.locator('[data-role="tool"] img[data-part-image]');
    await expect(user.count()).resolves.toBe(1);
    await expect(tool.count()).resolves.toBe(1);
    await expect(user.evaluate((img) => [(img as HTMLImageElement).naturalWidth, (img as HTMLImageElement).naturalHeight])).resolves.toEqual([64, 40]);
    await expect(tool.evaluate((img) => [(img as HTMLImageElement).naturalWidth, (img as HTMLImageElement).naturalHeight])).resolves.toEqual([48, 30]);
    await expect(user.getAttribute("src")).resolves.toBe(`data:image/png;base64,${photo.toString("base64")}`);
    await expect(page.locator('[data-role="user"] figcaption').textContent()).resolves.toBe(`image/png, ${photo.length < 1024 ? `${photo.length} bytes` : `${(photo.length / 1024).toFixed(1)} KB`}`);
    await expect(page.locator('[data-role="tool"] .body').first().textContent()).resolves.toBe("the screen now");
    await page.screenshot({ path: join(OUT, "viewer-images.png"), fullPage: true });
  });

  test("names an image given by URL without fetching it: the page loads nothing but itself", async () => {
    await expect(page.locator('[data-role="tool"] [data-part="image"]').textContent()).resolves.toBe("image at https://example.com/elsewhere.png");
    expect(requests).toEqual([pathToFileURL(html).href]);
    expect(readFileSync(html, "utf8")).toContain("img-src data:");
  });
});
