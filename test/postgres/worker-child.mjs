// One worker process of the PostgreSQL semantics tests (workers.test.ts). Plain JavaScript on purpose:
// it runs under bare `node` on the built package (dist/), as a user's worker would.
// argv[2] is JSON: { dist, url, schema, baseURL, id, concurrency, leaseMs, pollMs, listen, maxConnections?, sqlite?, effectsFile?, quiet? }.
// Every worker event goes to stdout as one JSON line. SIGTERM stops the worker gracefully.
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { makeAgents } from "../queue/fixture-agents.mjs";
import { openEffects } from "../queue/fixture-effects.mjs";

const args = JSON.parse(process.argv[2]);
const load = (file) => import(pathToFileURL(join(args.dist, file)).href);
const jianmu = await load("index.js");
const { PostgresRunStore, startWorker } = await load("postgres.js");
const { SqliteRunStore } = await load("sqlite.js");

// The side-effect counter lives in the database (or in args.effectsFile): every execution of a tool adds one
// to its note's row. With args.sqlite the store is that SQLite file (one machine, several processes) and so is the counter.
const effects = await openEffects(args);
const effect = effects.effect;

const print = (event) => process.stdout.write(JSON.stringify(event) + "\n");
let store = args.sqlite ? new SqliteRunStore({ path: args.sqlite, pollMs: 100 }) : undefined;
for (let attempt = 0; !store; attempt++) {
  try {
    store = await PostgresRunStore.connect({
      connectionString: args.url,
      schema: args.schema,
      listen: args.listen ?? true,
      pollMs: 100,
      ...(args.maxConnections ? { maxConnections: args.maxConnections } : {}),
    });
    break;
  } catch (error) {
    if (attempt > 300) throw error;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
const agents = makeAgents(jianmu, { baseURL: args.baseURL, journal: store, effect, approvalTimeoutMs: args.approvalTimeoutMs });
const worker = await startWorker({
  store,
  agents,
  id: args.id,
  concurrency: args.concurrency ?? 4,
  leaseMs: args.leaseMs ?? 2_000,
  pollMs: args.pollMs ?? 200,
  // A bench's worker (args.quiet) listens to nothing, as runAgent in process without onEvent: a line per run would be
  // the bench's cost, not the worker's, and an agent nobody hears builds no telemetry. It says it started once ready.
  onEvent: args.quiet ? undefined : (event) => {
    if (event.type !== "agent.event") return print(event);
    // Only the agent events the tests look for (text deltas would flood the pipe).
    if (["tool.call.started", "tool.call.completed", "tool.call.failed", "model.call.started"].includes(event.event.type)) {
      print({ type: event.type, worker: event.worker, runId: event.runId, event: { type: event.event.type, callId: event.event.callId } });
    }
  },
});
if (args.quiet) print({ type: "worker.started", worker: worker.id });
process.on("SIGTERM", () => {
  void worker.stop({ timeoutMs: 5_000 }).then(async () => {
    await store.close();
    await effects.end();
    process.exit(0);
  });
});
