// The queue bench's baseline, runAgent in process, in a process of its own, as each worker is in its own.
// In the bench's process it ran beside everything the bench does (every other in-process row's runs, the
// submits), so its code was compiled hot on more runs than any worker's and never idle between its rounds:
// a baseline that improved with the number of rows (bench/README, "The baseline in a process of its own").
// argv[2] is JSON: { dist, baseURL, url?, schema?, sqlite? }. Says { ready: true } over IPC once connected; then
// each { prefix, round, runs } runs that many scripted runs at concurrency 4, with checkpoints and the tool
// journal in the store, and answers { done: true } (or { error }). Exits when the parent disconnects.
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { makeAgents } from "../../test/queue/fixture-agents.mjs";
import { openEffects } from "../../test/queue/fixture-effects.mjs";
import { script } from "./model.mjs";

const args = JSON.parse(process.argv[2]);
const load = (file) => import(pathToFileURL(join(args.dist, file)).href);
const jianmu = await load("index.js");
const store = args.sqlite
  ? new (await load("sqlite.js")).SqliteRunStore({ path: args.sqlite })
  : await (await load("postgres.js")).PostgresRunStore.connect({ connectionString: args.url, schema: args.schema });
const effects = await openEffects(args);
const agents = makeAgents(jianmu, { baseURL: args.baseURL, journal: store, effect: effects.effect });

/** `runs` runs, four in flight at a time: the concurrency each worker of the bench claims with. */
async function runRound({ prefix, round, runs }) {
  const inflight = new Set();
  for (let i = 0; i < runs; i++) {
    const runId = `${prefix}-${round}-${i}`;
    const run = jianmu.runAgent(agents.basic, { runId, ...script(runId) }, { checkpoints: store }).finally(() => inflight.delete(run));
    inflight.add(run);
    if (inflight.size >= 4) await Promise.race(inflight);
  }
  await Promise.all(inflight);
}

process.on("message", (command) =>
  void runRound(command).then(
    () => process.send({ done: true }),
    (error) => process.send({ error: String(error?.stack ?? error) }),
  ),
);
process.on("disconnect", () => void Promise.all([store.close(), effects.end()]).then(() => process.exit(0)));
process.send({ ready: true });
