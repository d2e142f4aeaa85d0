import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { type Browser, type Page } from "playwright-core";
import { launchChromium } from "../chromium.js";


/** Build the web example's page and server (examples/web/start.mjs --build-only). */
export function buildWebExample(root: string): void {
  const built = spawnSync(process.execPath, [join(root, "examples/web/start.mjs"), "--build-only"], { cwd: root, encoding: "utf8" });
  if (built.status !== 0) throw new Error(`building the web example failed:\n${built.stdout}\n${built.stderr}`);
}

/** Headless Chromium on the example's page at `url`, its statechart drawn. */
export async function openExample(url: string): Promise<{ browser: Browser; page: Page }> {
  const browser = await launchChromium();
  const page = await browser.newPage({ viewport: { width: 1500, height: 1000 } });
  await page.goto(url);
  await page.locator('[data-testid="statechart"] svg').waitFor();
  return { browser, page };
}
