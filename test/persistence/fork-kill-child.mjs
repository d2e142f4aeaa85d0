// One process of the killed-run fork test (fork-after-kill.ts): runs an agent whose tool pays an
// invoice (a line in a ledger file outside the process), checkpointing into a real store, and dies
// with SIGKILL in the middle of it. Plain JavaScript on the built package (dist/), as a user's
// program would run it.
//
// argv[2] is JSON: { dist, store: { kind: "sqlite", path } | { kind: "postgres", url, schema }, ledger, runId, phase }.
//   inside-tool    the tool writes its line, then hangs until the parent kills the process
//   after-journal  the process kills itself right after the journal recorded the call's completion
import { appendFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { z } from "zod";

const args = JSON.parse(process.argv[2]);
const load = (file) => import(pathToFileURL(join(args.dist, file)).href);
const { createReactMachine, defineTool, human, runAgent } = await load("index.js");
const { scriptedModel } = await load("testing.js");
const store =
  args.store.kind === "sqlite"
    ? new (await load("sqlite.js")).SqliteCheckpointStore({ path: args.store.path })
    : await (await load("postgres.js")).PostgresRunStore.connect({ connectionString: args.store.url, schema: args.store.schema });

const pay = defineTool({
  name: "pay_invoice",
  description: "Pay an invoice (not idempotent: paying twice pays twice)",
  parameters: z.object({ invoice: z.string() }),
  execute: async ({ invoice }) => {
    appendFileSync(args.ledger, `paid ${invoice} in pid ${process.pid}\n`);
    // Hang, with a timer keeping the process alive: a bare pending promise lets Node exit on its own
    // (SQLite leaves no socket open) before the parent's kill arrives.
    if (args.phase === "inside-tool") await new Promise(() => setInterval(() => undefined, 1_000));
    return `paid ${invoice}`;
  },
});

// The journal is the store; after-journal dies the moment the completion is recorded.
const journal =
  args.phase === "after-journal"
    ? Object.assign(Object.create(store), {
        completed: async (key, outcome) => {
          await store.completed(key, outcome);
          process.kill(process.pid, "SIGKILL");
        },
      })
    : store;

const machine = createReactMachine({
  modelClient: scriptedModel([{ toolCalls: [{ id: "call_pay", name: "pay_invoice", arguments: { invoice: "INV-7" } }] }, { content: "paid" }]),
  tools: [pay],
  journal,
  configFile: false,
});
await runAgent(machine, { runId: args.runId, messages: [human("Pay invoice INV-7")] }, { checkpoints: store });
// Never reached: the process dies inside the run.
process.exit(3);
