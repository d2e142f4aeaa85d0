import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");

/**
 * Builds the package (`tsconfig.build.json`) when `dist/<entry>` is missing: the benches and the
 * entry-point checks import the compiled library, as a user would (npm ci builds it through `prepare`).
 */
export function buildDistIfMissing(entry = "index.js"): void {
  if (existsSync(join(ROOT, "dist", entry))) return;
  execFileSync(process.execPath, [join(ROOT, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.build.json"], { cwd: ROOT });
}
