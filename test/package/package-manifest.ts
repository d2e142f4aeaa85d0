import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { packageRoot } from "../../cli/package-root.js";

/**
 * What the published package promises, read from package.json: the tests over entry points and
 * peers are driven by it, so an entry point added there is covered without editing them.
 */
export const ROOT = packageRoot();

export interface Manifest {
  name: string;
  version: string;
  bin: Record<string, string>;
  exports: Record<string, string | { types: string; default: string }>;
  files: string[];
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  devDependencies?: Record<string, string>;
  scripts?: Record<string, string>;
}

export const manifest = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as Manifest;

/** The code entry points: "jianmu", "jianmu/testing", "jianmu/mcp", ... with their built files. */
export function entryPoints(): { specifier: string; subpath: string; types: string; code: string }[] {
  return Object.entries(manifest.exports)
    .filter((entry): entry is [string, { types: string; default: string }] => typeof entry[1] === "object")
    .map(([subpath, target]) => ({ specifier: subpath === "." ? manifest.name : `${manifest.name}/${subpath.slice(2)}`, subpath, types: target.types, code: target.default }));
}

/** Peers an app may leave out (MCP SDK, better-sqlite3, ...): `jianmu` itself must load none of them. */
export function optionalPeers(): string[] {
  return Object.entries(manifest.peerDependenciesMeta ?? {})
    .filter(([, meta]) => meta.optional === true)
    .map(([name]) => name);
}

/** Peers every app has (xstate, zod, openai). */
export function requiredPeers(): string[] {
  const optional = new Set(optionalPeers());
  return Object.keys(manifest.peerDependencies ?? {}).filter((name) => !optional.has(name));
}

/** The files `npm pack` would publish (no scripts run: the tests read the dist/ already built). */
export function packedFiles(): string[] {
  const out = execFileSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], { cwd: ROOT, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  const [report] = JSON.parse(out) as { files: { path: string }[] }[];
  return report!.files.map((file) => file.path).sort();
}
