import { randomBytes } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { createReactMachine, defineTool, human, MemoryCheckpointStore, runAgent } from "../dist/index.js";
import { scriptedModel } from "../dist/testing.js";

/*
 * How big a long run's checkpoint gets, with and without `config.context`: a 500-round run (one tool
 * call per round, ~80-token results) saved at every stable state, as `runAgent({ checkpoints })` does.
 * Sizes are bytes of the saved record's JSON, measured at a few rounds; no timings. A third variant
 * carries a 200 KB photo in its first message: its checkpoints must be the first variant's plus a
 * reference, the photo's bytes written once (`blobBytes`).
 *
 *   npm run build && node bench/context-checkpoint.mjs [--rounds N] [--out DIR]
 *
 * Writes DIR/context-checkpoint.{json,md} (DIR defaults to bench/results). `bytesPerRound` is the
 * record's growth per round between the last two marks: what each further round adds.
 */

const HERE = dirname(fileURLToPath(import.meta.url));
const option = (name, fallback) => {
  const at = process.argv.indexOf(`--${name}`);
  return at > 0 ? process.argv[at + 1] : fallback;
};
const ROUNDS = Number(option("rounds", 500));
const OUT = resolve(option("out", join(HERE, "results")));
// The usual marks, and the last round itself (so that a short run still has two marks).
const MARKS = [...new Set([10, 50, 100, 250, 500, 1000, ROUNDS])].filter((n) => n <= ROUNDS).sort((a, b) => a - b);

const lookup = defineTool({
  name: "lookup",
  description: "Look a record up",
  parameters: z.object({ id: z.number() }),
  execute: ({ id }) => `record ${id}: ${"lorem ipsum dolor sit amet ".repeat(12)}`,
});

class MeasuringStore extends MemoryCheckpointStore {
  sizes = new Map();
  blobBytes = 0;
  putBlob(runId, sha256, blob) {
    super.putBlob(runId, sha256, blob);
    this.blobBytes += blob.data.length;
  }
  save(runId, record) {
    super.save(runId, record);
    const { state, loop } = record.snapshot.context;
    this.sizes.set(state.rounds, {
      total: JSON.stringify(record).length,
      messages: JSON.stringify(state.messages).length,
      messageCount: state.messages.length,
      callLog: JSON.stringify(loop.history).length,
    });
  }
}

/** A 200 KB photo (random bytes: nothing about it compresses) for the variant whose first message carries one. */
const PHOTO = { type: "image", data: randomBytes(200_000).toString("base64"), mediaType: "image/png" };

async function measure(context, photo) {
  const script = [...Array.from({ length: ROUNDS }, (_, i) => ({ toolCalls: [{ id: `call_${i}`, name: "lookup", arguments: { id: i } }] })), { content: "done" }];
  const machine = createReactMachine({
    modelClient: scriptedModel(script),
    tools: [lookup],
    config: { maxIterations: ROUNDS + 1, ...(context ? { context } : {}) },
    configFile: false,
  });
  const store = new MeasuringStore();
  const first = photo ? human([{ type: "text", text: "Read every record." }, PHOTO]) : human("Read every record.");
  const output = await runAgent(machine, { messages: [first], runId: "bench" }, { checkpoints: store });
  if (output.status !== "succeeded") throw new Error(`the run failed: ${output.termination?.reason}`);
  return { atRound: Object.fromEntries(MARKS.map((round) => [round, store.sizes.get(round)])), blobBytes: store.blobBytes };
}

const variants = [
  { name: "no compaction", context: undefined },
  { name: "trim, maxTokens 4000, keepLast 6", context: { maxTokens: 4_000, strategy: "trim", keepLast: 6 } },
  // The photo is stored once for the run (docs/content-parts.md): the checkpoints hold a reference.
  { name: "no compaction, a 200 KB photo in the first message", context: undefined, photo: true },
];
const results = [];
for (const variant of variants) {
  const { atRound, blobBytes } = await measure(variant.context, variant.photo);
  const [before, last] = MARKS.slice(-2);
  results.push({ variant: variant.name, atRound, blobBytes, bytesPerRound: (atRound[last].total - atRound[before].total) / (last - before) });
}

const kb = (bytes) => `${(bytes / 1024).toFixed(1)} KB`;
const lines = [
  `# Checkpoint size of a ${ROUNDS}-round run`,
  "",
  "Bytes of the saved record (JSON) at round N; `messages` is the conversation inside it, `call log` is `loop.history`.",
  "",
  `| variant | ${MARKS.map((m) => `round ${m}`).join(" | ")} |`,
  `| --- | ${MARKS.map(() => "---").join(" | ")} |`,
  ...results.map((r) => `| ${r.variant} | ${MARKS.map((m) => `${kb(r.atRound[m].total)} (messages ${kb(r.atRound[m].messages)}, ${r.atRound[m].messageCount} msgs; call log ${kb(r.atRound[m].callLog)})`).join(" | ")} |`),
  "",
  `Growth per round from round ${MARKS.at(-2)} to ${MARKS.at(-1)}: ${results.map((r) => `${r.variant}: ${Math.round(r.bytesPerRound)} B`).join("; ")}.`,
  `Stored apart once per run (blobs): ${results.map((r) => `${r.variant}: ${kb(r.blobBytes)}`).join("; ")}.`,
  "",
];
const text = lines.join("\n");
console.log(text);
mkdirSync(OUT, { recursive: true });
writeFileSync(join(OUT, "context-checkpoint.json"), JSON.stringify({ date: new Date().toISOString(), rounds: ROUNDS, node: process.version, marks: MARKS, results }, null, 2) + "\n");
writeFileSync(join(OUT, "context-checkpoint.md"), text);
