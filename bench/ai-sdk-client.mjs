import { spawn } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { cliOption } from "./measure.mjs";

/*
 * What a model call costs through jianmu/ai-sdk: `node bench/ai-sdk-client.mjs [--reps N] [--smoke] [--out DIR]`.
 *
 * jianmu over the `openai` SDK, jianmu over the AI SDK's OpenAI provider (`fromAiSdk`, whole answers
 * and streamed) and the AI SDK's own loop (`generateText` / `streamText`) run the bench task
 * (K=10, P=1: 11 model calls a run) in one process, answered from memory (memory-fetch.mjs, no
 * socket), taking turns run by run. The figure is client CPU per model call, the median over the
 * runs. Once on AI SDK 6 (the `ai` devDependency) and once on AI SDK 7 (its `ai-v7` alias and
 * @ai-sdk/openai 4, resolved by ai7/register.mjs; on Node 22 from node_modules/.cache when the
 * package tests installed it there, else on this Node). Each AI SDK call of jianmu's is a
 * `generateText` or `streamText` of one step with the whole conversation; the AI SDK's own loop
 * makes one for the run and carries its messages from step to step.
 */

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, "..");
const argv = process.argv.slice(2);
const smoke = argv.includes("--smoke");
const reps = smoke ? 3 : Number(cliOption("reps", 200));
const CALLS_PER_RUN = 11;

if (argv.includes("--child")) await child();
else await parent();

/** One `ai` major: every contender, whole and streamed; prints its figures as JSON. */
async function child() {
  const [{ createAiSdkContender, createJianmu, createJianmuOverAiSdk }, { interleaved, median, timed }, { memoryEndpoint }, { taskModel }] = await Promise.all([
    import("./contenders.mjs"),
    import("./measure.mjs"),
    import("./memory-fetch.mjs"),
    import("./task.mjs"),
  ]);
  const { default: aiPackage } = await import("ai/package.json", { with: { type: "json" } });
  const builders = { jianmu: createJianmu, jianmuAiSdk: createJianmuOverAiSdk, aisdk: createAiSdkContender };
  const names = Object.keys(builders);
  const modes = {};
  for (const stream of [false, true]) {
    const endpoint = memoryEndpoint(taskModel({ k: 10, p: 1 }), stream);
    const contenders = Object.fromEntries(names.map((name) => [name, builders[name](endpoint)]));
    for (let i = 0; i < (smoke ? 2 : 100); i++) for (const name of names) await contenders[name].run();
    const cpu = Object.fromEntries(names.map((name) => [name, []]));
    for (let rep = 0; rep < reps; rep++) {
      for (const name of interleaved(rep, names)) cpu[name].push((await timed(() => contenders[name].run())).cpuMs);
    }
    modes[stream ? "stream" : "whole"] = Object.fromEntries(names.map((name) => [name, (median(cpu[name]) * 1000) / CALLS_PER_RUN]));
  }
  process.stdout.write(JSON.stringify({ ai: aiPackage.version, node: process.version, modes }));
}

/** Runs a child per `ai` major and reports them side by side. */
async function parent() {
  const node22 = join(ROOT, "node_modules", ".cache", "jianmu-node22", "node_modules", "node", "bin", "node");
  const majors = [
    { label: "AI SDK 6", node: process.execPath, args: [] },
    { label: "AI SDK 7", node: existsSync(node22) ? node22 : process.execPath, args: ["--import", join(HERE, "ai7", "register.mjs")] },
  ];
  const results = [];
  for (const major of majors) results.push({ ...major, ...(await runChild(major)) });
  const lines = [
    `# jianmu/ai-sdk: client CPU per model call, in process (${new Date().toISOString()}, ${reps} runs of 11 calls per contender and mode)`,
    "",
    "| `ai` (Node) | answer | jianmu, `openai` client | jianmu, `fromAiSdk` | AI SDK's own loop | `fromAiSdk` / AI SDK |",
    "| --- | --- | ---: | ---: | ---: | ---: |",
  ];
  for (const result of results) {
    for (const [mode, figures] of Object.entries(result.modes)) {
      const us = (value) => `${value.toFixed(0)} µs`;
      lines.push(`| ${result.ai} (${result.node}) | ${mode === "stream" ? "streamed" : "whole"} | ${us(figures.jianmu)} | ${us(figures.jianmuAiSdk)} | ${us(figures.aisdk)} | ${(figures.jianmuAiSdk / figures.aisdk).toFixed(2)}× |`);
    }
  }
  const report = `${lines.join("\n")}\n`;
  process.stdout.write(report);
  const out = cliOption("out", undefined);
  if (out) {
    mkdirSync(out, { recursive: true });
    writeFileSync(join(out, "ai-sdk-client.md"), report);
    writeFileSync(join(out, "ai-sdk-client.json"), `${JSON.stringify(results.map(({ label, ai, node, modes }) => ({ label, ai, node, modes })), null, 2)}\n`);
  }
}

function runChild({ label, node, args }) {
  return new Promise((resolve, reject) => {
    const child = spawn(node, [...args, fileURLToPath(import.meta.url), "--child", "--reps", String(reps), ...(smoke ? ["--smoke"] : [])], { cwd: ROOT, stdio: ["ignore", "pipe", "inherit"] });
    let output = "";
    child.stdout.on("data", (chunk) => (output += chunk));
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve(JSON.parse(output)) : reject(new Error(`${label}: the measuring process exited with ${code}`))));
  });
}
