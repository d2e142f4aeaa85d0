import { execFileSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { median } from "./measure.mjs";

/*
 * Cold import: what `import("jianmu")` costs a fresh process, in time and in heap. Each sample is
 * a new `node --expose-gc` process (this file run with `--child WHAT`) that times the import, then
 * collects garbage and reads the heap. Three kinds of process, interleaved sample by sample so a
 * busy machine slows them alike:
 *   - empty: imports nothing (its heap is the baseline every other figure is taken over);
 *   - peers: xstate + zod + openai, which any app using jianmu loads anyway;
 *   - jianmu: `import("jianmu")` (the compiled library, through the package's own exports).
 * `ms` is the median time of the import inside the process (node's own start excluded, the same
 * for all three); `heapMB` is the median heap after import + GC, minus the empty process's.
 *
 *   node bench/import.mjs [--reps N]
 */

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = dirname(HERE);
const KINDS = ["empty", "peers", "jianmu"];

const IMPORTS = {
  empty: async () => undefined,
  peers: () => Promise.all([import("xstate"), import("zod"), import("openai")]),
  jianmu: () => import("jianmu"),
};

async function child(kind) {
  const load = IMPORTS[kind];
  if (!load) throw new Error(`--child needs one of ${KINDS.join(", ")}, got ${JSON.stringify(kind)}`);
  const t0 = performance.now();
  await load();
  const ms = performance.now() - t0;
  for (let i = 0; i < 3; i++) {
    globalThis.gc();
    await new Promise((resolve) => setImmediate(resolve));
  }
  process.stdout.write(JSON.stringify({ ms, heap: process.memoryUsage().heapUsed }));
}

function sample(kind) {
  const text = execFileSync(process.execPath, ["--expose-gc", fileURLToPath(import.meta.url), "--child", kind], { cwd: ROOT, encoding: "utf8" });
  return JSON.parse(text);
}

/** Medians over `reps` fresh processes of each kind: `{ empty, peers, jianmu }`, each `{ ms, heapMB }`. */
export async function measureImport({ reps = 10 } = {}) {
  const samples = Object.fromEntries(KINDS.map((kind) => [kind, { ms: [], heap: [] }]));
  for (let rep = 0; rep < reps; rep++) {
    // Rotate the order so that none always runs first (a cold file cache, a just-finished sibling).
    for (let i = 0; i < KINDS.length; i++) {
      const kind = KINDS[(rep + i) % KINDS.length];
      const { ms, heap } = sample(kind);
      samples[kind].ms.push(ms);
      samples[kind].heap.push(heap);
    }
  }
  const emptyHeap = median(samples.empty.heap);
  const MB = 2 ** 20;
  const figure = (kind) => ({
    ms: median(samples[kind].ms),
    heapMB: (kind === "empty" ? emptyHeap : median(samples[kind].heap) - emptyHeap) / MB,
  });
  return { empty: figure("empty"), peers: figure("peers"), jianmu: figure("jianmu") };
}

const childAt = process.argv.indexOf("--child");
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (childAt !== -1) await child(process.argv[childAt + 1]);
  else {
    const repsAt = process.argv.indexOf("--reps");
    console.log(await measureImport({ reps: repsAt === -1 ? 10 : Number(process.argv[repsAt + 1]) }));
  }
}
