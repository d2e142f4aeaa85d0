#!/usr/bin/env node
// Run an example on plain Node 20 (no tsx, no type stripping): compile the examples with the
// project's own TypeScript into node_modules/.cache/jianmu-examples, then call the example's main().
//
//   node examples/run.mjs minimal            offline: a loopback server replays scripted/recorded turns
//   OPENAI_API_KEY=sk-... node examples/run.mjs research-assistant     the real model (JIANMU_MODEL picks it)
//   OPENAI_BASE_URL=http://127.0.0.1:11434/v1 JIANMU_MODEL=qwen3 node examples/run.mjs minimal   a local server
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const examplesDir = dirname(fileURLToPath(import.meta.url));
const root = dirname(examplesDir);
const names = readdirSync(examplesDir)
  .filter((file) => file.endsWith(".ts") && !file.endsWith(".test.ts"))
  .map((file) => file.slice(0, -3));

const name = process.argv[2]?.replace(/^examples\//, "").replace(/\.(ts|js)$/, "");
if (!name || !names.includes(name)) {
  console.error(`usage: node examples/run.mjs <example>\nexamples: ${names.join(", ")}`);
  process.exit(2);
}

const tsc = join(root, "node_modules", "typescript", "bin", "tsc");
if (!existsSync(tsc)) {
  console.error("TypeScript is not installed: run `npm ci` in the jianmu folder first.");
  process.exit(2);
}
const built = spawnSync(process.execPath, [tsc, "-p", join(examplesDir, "tsconfig.json")], { stdio: "inherit" });
if (built.status !== 0) process.exit(built.status ?? 1);

const compiled = join(root, "node_modules", ".cache", "jianmu-examples", "examples", `${name}.js`);
const example = await import(pathToFileURL(compiled).href);
try {
  await example.main();
} catch (error) {
  console.error(error instanceof Error ? `${error.name}: ${error.message}` : error);
  process.exitCode = 1;
}
