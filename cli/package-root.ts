import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The jianmu package folder, found by walking up from this file: the same code runs from source
 * (cli/*.ts under vitest) and built (dist/cli/*.js), at different depths.
 */
export function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const manifest = join(dir, "package.json");
    if (existsSync(manifest) && (JSON.parse(readFileSync(manifest, "utf8")) as { name?: string }).name === "jianmu") return dir;
    const parent = dirname(dir);
    if (parent === dir) throw new Error("cannot find the jianmu package folder (package.json named jianmu) above " + fileURLToPath(import.meta.url));
    dir = parent;
  }
}
