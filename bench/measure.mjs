/* Small measuring helpers shared by the scenarios. */

/** `--name value` from the command line, or `fallback`. */
export function cliOption(name, fallback) {
  const at = process.argv.indexOf(`--${name}`);
  return at === -1 ? fallback : process.argv[at + 1];
}

export function median(values) {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** The value below which a share `q` (0.5 the median, 0.99 the 99th percentile) of the values lie, the nearest rank. */
export function percentile(values, q) {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

/**
 * The contenders in turn for repetition `rep`, so that none always runs first or right after the
 * same other one. A run pays for garbage and cold caches the run before it left, and contenders
 * leave very different amounts (measured: one library's CPU per run 14 ms after one contender and
 * 19 ms after another, in the same process), so the orders form a Williams design: over one cycle
 * (n repetitions for an even number of names, 2n for an odd one) every name runs in every position
 * equally often and right after every other name equally often. (The rotations used before gave each
 * of four names only two predecessors, and not the same ones: the AI SDK followed the floor, the
 * lightest, where jianmu followed the chart or the AI SDK.) test/bench/interleaved.test.ts holds it.
 */
export function interleaved(rep, names) {
  const n = names.length;
  // The first row: 0, 1, n-1, 2, n-2, ...; the others add the row's number to each, modulo n.
  const first = [0];
  for (let low = 1, high = n - 1; first.length < n; ) first.push(first.length % 2 === 1 ? low++ : high--);
  const rows = n % 2 === 0 ? n : 2 * n;
  const row = rep % rows;
  const order = first.map((index) => names[(index + row) % n]);
  // For an odd number of names the mirrored rows balance who follows whom.
  return row >= n ? order.reverse() : order;
}

/** Wall and CPU time (user + system, of this whole process) of one call, in milliseconds. */
export async function timed(fn) {
  const cpu = process.cpuUsage();
  const start = performance.now();
  const value = await fn();
  const wallMs = performance.now() - start;
  const used = process.cpuUsage(cpu);
  return { value, wallMs, cpuMs: (used.user + used.system) / 1000 };
}

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

/**
 * Heap and RSS after full collections. Several rounds with a turn of the event loop between
 * them, so that objects freed by finalizers and weak callbacks are collected too.
 */
export async function settledMemory() {
  if (typeof globalThis.gc !== "function") throw new Error("run node with --expose-gc: memory figures need a forced GC");
  for (let i = 0; i < 4; i++) {
    globalThis.gc();
    await nextTurn();
  }
  const { heapUsed, rss } = process.memoryUsage();
  return { heap: heapUsed, rss };
}

/** Run `total` runs with at most `concurrency` in flight; resolves when all are done. */
export async function runPool(total, concurrency, runOne) {
  let started = 0;
  const worker = async () => {
    while (started < total) {
      started += 1;
      await runOne();
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, total) }, worker));
}

/** Least-squares slope of ys over xs. */
export function slope(xs, ys) {
  const n = xs.length;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let num = 0;
  let den = 0;
  for (let i = 0; i < n; i++) {
    num += (xs[i] - mx) * (ys[i] - my);
    den += (xs[i] - mx) ** 2;
  }
  return den === 0 ? 0 : num / den;
}
