import { execFile } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { manifest, packedFiles, ROOT } from "./package-manifest.js";

/**
 * Fresh apps that use the packed tarball as a user's app would: `npm pack`, a new folder with its
 * own package.json, `npm install` from the registry. Shared by the package test (Node 20 with the
 * lowest peers, Node 22 with the latest) and the docs test (each page's install line).
 */
export const run = promisify(execFile);
export const TSC = join(ROOT, "node_modules", "typescript", "bin", "tsc");

/** The script prepack and postpack run (not itself published). */
const PACK_SCRIPT = "scripts/pack-manifest.mjs";

/**
 * `npm pack` of the built package into a temp folder, with its pack scripts run as a release runs
 * them (prepack strips the manifest's scripts, postpack restores them), except the build: dist/ is
 * already built. Packed from a copy of the files it publishes, so the checkout's package.json is
 * never rewritten under the tests that read it. Returns the .tgz path.
 */
export async function packTarball(): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), "jianmu-pack-"));
  const stage = mkdtempSync(join(tmpdir(), "jianmu-stage-"));
  for (const file of [...packedFiles(), PACK_SCRIPT]) {
    mkdirSync(dirname(join(stage, file)), { recursive: true });
    copyFileSync(join(ROOT, file), join(stage, file));
  }
  writeFileSync(join(stage, "package.json"), `${JSON.stringify({ ...manifest, scripts: { ...manifest.scripts, build: "node -e 0" } }, null, 2)}\n`);
  const { stdout } = await run("npm", ["pack", "--json", "--pack-destination", dir], { cwd: stage });
  rmSync(stage, { recursive: true, force: true });
  return join(dir, (JSON.parse(stdout) as { filename: string }[])[0]!.filename);
}


export interface AppOptions {
  /** Dependencies as package.json writes them; "jianmu" is the tarball. */
  dependencies: Record<string, string>;
  /**
   * The Node that runs npm (default: this one). It matters: npm picks, of the versions a range
   * allows, the newest whose `engines` fit the Node it runs on (openai 7 needs Node 22).
   */
  node?: string;
}

/** npm's own CLI script, to run it under another Node. */
async function npmCli(): Promise<string> {
  const { stdout } = await run("npm", ["prefix", "-g"]);
  const cli = join(stdout.trim(), "lib", "node_modules", "npm", "bin", "npm-cli.js");
  if (!existsSync(cli)) throw new Error(`npm's CLI is not at ${cli}`);
  return cli;
}

/** A new app folder holding only its package.json (an ES module app), with these fields added. */
function newApp(label: string, fields: Record<string, unknown> = {}): string {
  const name = label.replace(/[^\w-]+/g, "-").slice(0, 60);
  const app = mkdtempSync(join(tmpdir(), `jianmu-app-${name}-`));
  writeFileSync(join(app, "package.json"), `${JSON.stringify({ name: `app-${name.toLowerCase()}`, private: true, type: "module", ...fields }, null, 2)}\n`);
  return app;
}

/** A new app folder with these dependencies installed (one `npm install`). */
export async function installApp(label: string, tarball: string, options: AppOptions): Promise<string> {
  const app = newApp(label, { dependencies: { jianmu: `file:${tarball}`, ...options.dependencies } });
  const args = ["install", "--no-audit", "--no-fund", "--loglevel=error"];
  if (options.node) await run(options.node, [await npmCli(), ...args], { cwd: app, timeout: 300_000 });
  else await run("npm", args, { cwd: app, timeout: 300_000 });
  return app;
}

/**
 * A new app folder made with a user's own npm commands (each the words after `npm`, e.g. `install
 * jianmu xstate zod openai`), `jianmu` meaning the tarball: what a page's install line does.
 */
export async function installByCommands(label: string, tarball: string, commands: string[][], flags: string[] = []): Promise<string> {
  const app = newApp(label);
  for (const command of commands) {
    const words = command.map((word) => (word === "jianmu" ? tarball : word));
    await run("npm", [...words, "--no-audit", "--no-fund", "--loglevel=error", ...flags], { cwd: app, timeout: 600_000 });
  }
  return app;
}

export function installedVersion(app: string, name: string): string {
  return (JSON.parse(readFileSync(join(app, "node_modules", name, "package.json"), "utf8")) as { version: string }).version;
}

/**
 * A Node 22 binary, from the npm registry's `node@22` package (the registry is the one network a CI
 * machine here reaches): installed once into node_modules/.cache/jianmu-node22, reused after.
 */
export async function node22(): Promise<string> {
  const dir = join(ROOT, "node_modules", ".cache", "jianmu-node22");
  const binary = join(dir, "node_modules", "node", "bin", "node");
  if (!existsSync(binary)) {
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "package.json"), `${JSON.stringify({ name: "jianmu-node22", private: true }, null, 2)}\n`);
    await run("npm", ["install", "--no-audit", "--no-fund", "--loglevel=error", "node@22"], { cwd: dir, timeout: 300_000 });
  }
  const { stdout } = await run(binary, ["--version"]);
  if (!stdout.startsWith("v22.")) throw new Error(`${binary} is ${stdout.trim()}, not Node 22`);
  return binary;
}
