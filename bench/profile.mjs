import { mkdirSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { runClient, startServer } from "./processes.mjs";

/*
 * Profile one contender: `node bench/profile.mjs [jianmu|chart|floor] [runs] [stream|whole] [DIR]` runs
 * K=10, P=1 runs one after another in a client started with --cpu-prof against the bench server,
 * then prints where the client's CPU time went (self time by function and by package).
 * Open the .cpuprofile in DIR with Chrome DevTools for the whole picture.
 */

const ROOT_URL = `file://${dirname(dirname(fileURLToPath(import.meta.url)))}/`;

/**
 * The buckets bench/README.md's "Where a round's time goes" speaks of, by where a sampled function
 * lives: XState, jianmu's own compiled files, the openai SDK, node's HTTP stack and other internals
 * (undici, streams, sockets, timers), GC; idle time is left out of the shares.
 */
function bucketOf(callFrame) {
  const { url, functionName } = callFrame;
  if (functionName === "(idle)") return "idle";
  if (functionName === "(garbage collector)") return "GC";
  if (url.includes("/node_modules/xstate/")) return "XState";
  if (url.includes("/node_modules/openai/")) return "openai SDK";
  if (url.includes("/node_modules/zod/")) return "zod";
  if (url.startsWith(ROOT_URL) && !url.includes("/node_modules/")) return url.includes("/bench/") ? "bench harness (contender, tools)" : "jianmu's own files (dist/)";
  if (url.startsWith("node:") || url === "") return "node internals (HTTP via undici, streams, sockets, timers, microtasks)";
  return "other";
}

const [contender = "jianmu", runs = "300", mode = "whole", dir = "/tmp/jianmu-prof"] = process.argv.slice(2);
const out = resolve(dir, `${contender}-${mode}-${Date.now()}`);
mkdirSync(out, { recursive: true });

const stderr = [];
const server = startServer(stderr);
await server.ready;
const baseURL = await server.restart();
const answer = await runClient({ scenario: "repeat", contender, runs: Number(runs), stream: mode === "stream", baseURL }, stderr, {
  execArgv: ["--cpu-prof", "--cpu-prof-dir", out, "--cpu-prof-interval", "100"],
});
await server.stop();
if (answer.error) throw new Error(answer.error);
console.log(answer.result);

const file = readdirSync(out).find((name) => name.endsWith(".cpuprofile"));
const profile = JSON.parse(readFileSync(join(out, file), "utf8"));
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const selfTicks = new Map();
for (const id of profile.samples) selfTicks.set(id, (selfTicks.get(id) ?? 0) + 1);
const total = profile.samples.length;
const byFunction = new Map();
const byPackage = new Map();
const byBucket = new Map();
for (const [id, ticks] of selfTicks) {
  const { callFrame } = byId.get(id);
  const where = callFrame.url.replace(/^file:\/\/.*?\/node_modules\//, "").replace(ROOT_URL, "");
  const bucket = bucketOf(callFrame);
  byBucket.set(bucket, (byBucket.get(bucket) ?? 0) + ticks);
  const fn = `${callFrame.functionName || "(anonymous)"} ${where}:${callFrame.lineNumber + 1}`;
  byFunction.set(fn, (byFunction.get(fn) ?? 0) + ticks);
  const pkg = callFrame.url === "" ? callFrame.functionName : where.split("/").slice(0, where.startsWith("@") ? 2 : 1).join("/").replace(/^node:.*/, "node:internal");
  byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + ticks);
}
const top = (map, n) =>
  [...map.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([name, ticks]) => `${((100 * ticks) / total).toFixed(1).padStart(5)}%  ${name}`)
    .join("\n");
const busy = total - (byBucket.get("idle") ?? 0);
const buckets = [...byBucket.entries()]
  .filter(([name]) => name !== "idle")
  .sort((a, b) => b[1] - a[1])
  .map(([name, ticks]) => `${((100 * ticks) / busy).toFixed(1).padStart(5)}%  ${name}`)
  .join("\n");
console.log(`\nself time by bucket (share of busy time, idle ${((100 * (byBucket.get("idle") ?? 0)) / total).toFixed(1)}% left out):\n${buckets}`);
console.log(`\nself time by package/folder:\n${top(byPackage, 15)}\n\nself time by function:\n${top(byFunction, 40)}\n\nprofile: ${join(out, file)}`);
