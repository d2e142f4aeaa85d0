// One process of the web-replica tests (web-replicas.test.ts): an HTTP-only replica (`agentHandler({ store,
// worker: false })`) or a worker (`startWorker({ observe: storeRunEvents(store) })`), on the built package.
// argv[2] is JSON: { dist, role: "replica" | "worker", url, schema, baseURL, id, leaseMs?, concurrency?, timing? }.
// With timing (bench/queue/web.mjs), a worker prints each text delta with the wall-clock time it was emitted.
// It prints one JSON line when ready ({ ready: true, port? }); SIGKILL is how the tests stop it mid-run.
import { createServer } from "node:http";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { z } from "zod";

const args = JSON.parse(process.argv[2]);
const load = (file) => import(pathToFileURL(join(args.dist, file)).href);
const { createReactMachine, defineTool, ModelClient, requireApproval } = await load("index.js");
const { PostgresRunStore, startWorker } = await load("postgres.js");
const { agentHandler, toNodeListener, storeRunEvents } = await load("http.js");

const store = await PostgresRunStore.connect({ connectionString: args.url, schema: args.schema, pollMs: 100 });
// Every execution of the tool adds one to its note's row: "the tool ran once" is counted in the database.
const effects = new pg.Pool({ connectionString: args.url, max: 2 });
const pay = defineTool({
  name: "pay",
  description: "Pay an invoice (needs a person's approval)",
  parameters: z.object({ note: z.string(), sleepMs: z.number().int().min(0).optional() }),
  execute: async ({ note, sleepMs }) => {
    await effects.query("INSERT INTO effects (note, count) VALUES ($1, 1) ON CONFLICT (note) DO UPDATE SET count = effects.count + 1", [note]);
    if (sleepMs) await sleep(sleepMs);
    return `paid ${note}`;
  },
});
const modelClient = ModelClient.resolve({ baseURL: args.baseURL, apiKey: "test-key", model: "scripted", resilience: { maxRetries: 0 } });
const agents = {
  payer: createReactMachine({ name: "payer", modelClient, journal: store, configFile: false, tools: [pay], constraints: [requireApproval({ tools: ["pay"] })] }),
};

if (args.role === "worker") {
  const timing = (event) => {
    if (event.type === "agent.event" && event.event.type === "text.delta") process.stdout.write(JSON.stringify({ delta: event.event.delta, at: performance.timeOrigin + performance.now() }) + "\n");
  };
  await startWorker({ store, agents, id: args.id, leaseMs: args.leaseMs ?? 1_500, pollMs: 100, concurrency: args.concurrency ?? 4, observe: storeRunEvents(store), ...(args.timing ? { onEvent: timing } : {}) });
  process.stdout.write(JSON.stringify({ ready: true }) + "\n");
} else {
  const handler = agentHandler({ agents, store, worker: false, basePath: "/api", streamPollMs: 100 });
  const server = createServer(toNodeListener(handler));
  server.listen(0, "127.0.0.1", () => process.stdout.write(JSON.stringify({ ready: true, port: server.address().port }) + "\n"));
}
