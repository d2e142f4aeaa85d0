#!/usr/bin/env node
// Run an example on plain Node 20 (no tsx, no type stripping): compile the examples with the
// project's own TypeScript into node_modules/.cache/jianmu-examples (again only when a source
// changed), then call the example's main().
//
//   node examples/run.mjs minimal            offline: a loopback server replays scripted/recorded turns
//   OPENAI_API_KEY=sk-... node examples/run.mjs research-assistant     the real model (JIANMU_MODEL picks it)
//   OPENAI_BASE_URL=http://127.0.0.1:11434/v1 JIANMU_MODEL=qwen3 node examples/run.mjs minimal   a local server
//
// Exit codes: 0 the example's run succeeded (or it was skipped, saying why), 1 its run failed (the
// example printed why) or it threw, 2 usage.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const examplesDir = dirname(fileURLToPath(import.meta.url));
const root = dirname(examplesDir);
const cache = join(root, "node_modules", ".cache", "jianmu-examples");
const names = readdirSync(examplesDir)
  .filter((file) => file.endsWith(".ts") && !file.endsWith(".test.ts"))
  .map((file) => file.slice(0, -3));

const name = process.argv[2]?.replace(/^examples\//, "").replace(/\.(ts|js)$/, "");
if (!name || !names.includes(name)) {
  console.error(`usage: node examples/run.mjs <example>\nexamples: ${names.join(", ")}`);
  process.exit(2);
}

/** The newest change to anything the compiled examples come from: TypeScript sources and tsconfigs outside tests. */
function newestSource(dir, depth = 0) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (["node_modules", "dist", "test", "test-output", "bench", ".git"].includes(entry.name)) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory() && depth < 6) newest = Math.max(newest, newestSource(path, depth + 1));
    else if (/\.(ts|tsx)$|tsconfig\.json$/.test(entry.name) && !entry.name.endsWith(".test.ts")) newest = Math.max(newest, statSync(path).mtimeMs);
  }
  return newest;
}

const tsc = join(root, "node_modules", "typescript", "bin", "tsc");
if (!existsSync(tsc)) {
  console.error("TypeScript is not installed: run `npm ci` in the jianmu folder first.");
  process.exit(2);
}
const stamp = join(cache, ".compiled");
if (!existsSync(stamp) || statSync(stamp).mtimeMs < newestSource(root)) {
  const built = spawnSync(process.execPath, [tsc, "-p", join(examplesDir, "tsconfig.json")], { stdio: "inherit" });
  if (built.status !== 0) process.exit(built.status ?? 1);
  mkdirSync(cache, { recursive: true });
  writeFileSync(stamp, `${new Date().toISOString()}\n`);
}

const example = await import(pathToFileURL(join(cache, "examples", `${name}.js`)).href);

/**
 * `jianmu serve` answers only the tasks it knows (it says which at /jianmu/tasks). An example whose
 * task is not among them needs a real model: say so and skip it, rather than fail on a 404.
 */
async function servedElsewhere(task) {
  const base = process.env.OPENAI_BASE_URL?.trim();
  if (!base || typeof task !== "string") return undefined;
  let known;
  try {
    const response = await fetch(new URL("/jianmu/tasks", base), { signal: AbortSignal.timeout(2_000) });
    if (!response.ok) return undefined;
    known = await response.json();
  } catch {
    return undefined;
  }
  if (known?.server !== "jianmu serve" || !Array.isArray(known.tasks)) return undefined;
  const normal = (text) => text.trim().replace(/\s+/g, " ").toLowerCase();
  if (known.tasks.some((t) => normal(t) === normal(task))) return undefined;
  return `skipped ${name}: it needs a real model. The endpoint at ${base} is jianmu serve, which replays only its own tasks (${known.tasks.map((t) => `"${t}"`).join(", ")}), not this example's ("${task}"). Set OPENAI_API_KEY (or OPENAI_BASE_URL to another server), or unset OPENAI_BASE_URL to run it offline.`;
}

const skip = await servedElsewhere(example.TASK);
if (skip) {
  console.log(skip);
  process.exit(0);
}
try {
  await example.main();
} catch (error) {
  // ExampleRunFailed: the example has printed why its run failed.
  if (!(error instanceof Error && error.name === "ExampleRunFailed")) console.error(error instanceof Error ? `${error.name}: ${error.message}` : error);
  process.exitCode = 1;
}
