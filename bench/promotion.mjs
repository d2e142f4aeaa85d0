import { Session } from "node:inspector/promises";
import { CONTENDERS } from "./contenders.mjs";
import { memoryEndpoint } from "./memory-fetch.mjs";
import { taskModel } from "./task.mjs";

/*
 * What outlives the young generation: `node bench/promotion.mjs [runs] [--smoke] [--only a,b]`.
 *
 * Each contender runs K=10, P=1 runs one after another in this process, answered from memory
 * (memory-fetch.mjs, as in inproc.mjs), while V8's sampling heap profiler keeps the objects that
 * were collected by a major GC or are still alive at the end, and drops those a scavenge collected.
 * With one run in flight and scavenges dozens of runs apart, what it keeps is what got promoted
 * to the old generation and died there: work for the scavenger (copying it) and for the next
 * mark-compact. Printed per run, with the allocating functions that promote the most.
 * One contender per process would be cleaner; they share one here, taking turns by blocks, so
 * the figures compare contenders of the same run, not absolute values.
 */

const argv = process.argv.slice(2);
const smoke = argv.includes("--smoke");
const runs = smoke ? 20 : Number(argv.find((a) => /^\d+$/.test(a)) ?? 1000);
const onlyAt = argv.indexOf("--only");
const names = onlyAt >= 0 ? argv[onlyAt + 1].split(",") : ["floor", "chart", "jianmu", "aisdk"];
const TOP = 6;

const endpoint = memoryEndpoint(taskModel({ k: 10, p: 1 }), false);
const session = new Session();
session.connect();
await session.post("HeapProfiler.enable");

/** Bytes per run kept by the profiler (promoted, or alive at the end), in all and by allocating function. */
async function promotedPerRun(contender) {
  for (let i = 0; i < (smoke ? 5 : 300); i++) await contender.run();
  await session.post("HeapProfiler.collectGarbage");
  await session.post("HeapProfiler.startSampling", { samplingInterval: 256, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: false });
  for (let i = 0; i < runs; i++) await contender.run();
  await session.post("HeapProfiler.collectGarbage");
  const { profile } = await session.post("HeapProfiler.stopSampling");
  const byFunction = new Map();
  let total = 0;
  const visit = (node) => {
    total += node.selfSize;
    if (node.selfSize > 0) {
      const { functionName, url, lineNumber } = node.callFrame;
      const where = `${functionName || "(anonymous)"} ${url.replace(/^.*node_modules\//, "").replace(/^.*\/(dist|bench)\//, "$1/") || "(native)"}:${lineNumber + 1}`;
      byFunction.set(where, (byFunction.get(where) ?? 0) + node.selfSize);
    }
    node.children.forEach(visit);
  };
  visit(profile.head);
  const top = [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, TOP).map(([where, bytes]) => ({ where, kbPerRun: bytes / runs / 1024 }));
  return { kbPerRun: total / runs / 1024, top };
}

console.log(`Promoted to the old generation and collected there, per K=10 P=1 run (non-streaming, in process, ${runs} runs each):`);
console.log("| contender | KB per run | most by |");
console.log("|---|---:|---|");
for (const name of names) {
  const create = CONTENDERS[name];
  if (!create) throw new Error(`unknown contender ${name}; use ${Object.keys(CONTENDERS).join(", ")}`);
  const { kbPerRun, top } = await promotedPerRun(create(endpoint));
  console.log(`| ${name} | ${kbPerRun.toFixed(1)} | ${top.map((t) => `${t.where} ${t.kbPerRun.toFixed(1)}`).join("; ")} |`);
}
session.disconnect();
process.exit(0);
