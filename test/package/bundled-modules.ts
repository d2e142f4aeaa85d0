import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

/**
 * dist/ is a rolldown bundle (scripts/bundle.mjs): a file Node loads may hold many of tsc's modules,
 * each under a `// dist/<module>.js` comment. Tests that watch which modules an import loads see
 * chunk URLs; this adds, for each loaded file in dist/, the URL each module in it had before
 * bundling (`.../dist/machines/react-machine.js`), so they can keep asking about modules.
 */
export function withBundledModules(urls: readonly string[]): string[] {
  const expanded = [...urls];
  for (const url of urls) {
    const at = url.lastIndexOf("/dist/");
    if (!url.startsWith("file:") || at === -1 || !url.endsWith(".js")) continue;
    const distUrl = url.slice(0, at + "/dist/".length);
    for (const [, module] of readFileSync(fileURLToPath(url), "utf8").matchAll(/^\/\/ dist\/(\S+\.js)$/gm)) {
      expanded.push(distUrl + module);
    }
  }
  return [...new Set(expanded)];
}
