import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The jianmu checkout, found by walking up from this file: the examples run from source (under
 * vitest) and compiled (examples/run.mjs builds them into node_modules/.cache), at different depths.
 */
export function repoPath(...parts: string[]): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const manifest = join(dir, "package.json");
    if (existsSync(manifest) && (JSON.parse(readFileSync(manifest, "utf8")) as { name?: string }).name === "jianmu") return join(dir, ...parts);
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`cannot find the jianmu checkout (a package.json named jianmu) above ${fileURLToPath(import.meta.url)}`);
    dir = parent;
  }
}

