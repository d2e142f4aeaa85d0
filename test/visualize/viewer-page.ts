import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { type Browser, type Page } from "playwright-core";
import { launchChromium } from "../chromium.js";
import { createActor } from "xstate";
import type { AgentInput, AgentOutput } from "../../machines/contract/context.js";
import type { ReactMachine } from "../../machines/react-machine.js";
import { RunRecorder } from "../../visualize/recorder.js";
import { writeViewer } from "../../visualize/viewer.js";

/** What the viewer's browser tests share: a run recorded to JSONL, and its page opened in Chromium. */


/** Runs `machine` on `input` to its end, recording every inspection event to `path`. */
export async function recordRun(machine: ReactMachine, input: AgentInput, path: string, options: { omitText?: boolean } = {}): Promise<AgentOutput> {
  const recorder = new RunRecorder({ path, machine, ...(options.omitText !== undefined ? { omitText: options.omitText } : {}) });
  const actor = createActor(machine, { input, inspect: (event) => recorder.record(event) });
  recorder.attach(actor);
  const output = await new Promise<AgentOutput>((done, fail) => {
    actor.subscribe({ complete: () => done(actor.getSnapshot().output as AgentOutput), error: fail });
    actor.start();
  });
  await new Promise((settle) => setTimeout(settle, 0));
  await recorder.close();
  return output;
}

/** Opens the viewer page `html` in headless Chromium. */
export async function openViewer(html: string): Promise<{ browser: Browser; page: Page }> {
  const browser = await launchChromium();
  const page = await browser.newPage({ viewport: { width: 1500, height: 1000 } });
  await page.goto(pathToFileURL(html).href);
  return { browser, page };
}

/**
 * Records a run with `record` into `dir`/run.jsonl, writes its viewer to `dir`/run.html and opens it;
 * `dir` is made when missing.
 */
export async function viewRun(dir: string, record: (recording: string) => Promise<AgentOutput>): Promise<{ browser: Browser; page: Page; output: AgentOutput }> {
  mkdirSync(dir, { recursive: true });
  const recording = join(dir, "run.jsonl");
  const output = await record(recording);
  await writeViewer(recording, join(dir, "run.html"));
  return { ...(await openViewer(join(dir, "run.html"))), output };
}
