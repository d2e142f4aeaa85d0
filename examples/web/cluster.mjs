#!/usr/bin/env node
// `npm run example:web:cluster`: the web example as it would run behind a load balancer: two HTTP-only
// replicas and one worker process sharing the run queue in one SQLite file, behind a tiny round-robin
// proxy (proxy.ts) on http://127.0.0.1:5178/. Kill either replica mid-run: the page carries on from the other.
//
//   node examples/web/cluster.mjs [--port 5178] [--db .jianmu/web-cluster.db] [--ledger file] [--no-build]
// Prints "replica <host:port> pid <pid>" for each replica, then "listening on <url>".
import { spawn, spawnSync } from "node:child_process";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, "../..");
const { values } = parseArgs({
  options: {
    port: { type: "string", default: "5178" },
    db: { type: "string", default: join(root, ".jianmu", "web-cluster.db") },
    ledger: { type: "string" },
    "no-build": { type: "boolean", default: false },
  },
});
if (!values["no-build"]) {
  const built = spawnSync(process.execPath, [join(here, "start.mjs"), "--build-only"], { stdio: "inherit" });
  if (built.status !== 0) process.exit(built.status ?? 1);
}

const children = [];
/** start.mjs in a role; resolves with its "listening on" URL (a replica) or once it runs (the worker). */
function start(role) {
  const args = [join(here, "start.mjs"), "--no-build", "--role", role, "--port", "0", "--db", resolve(values.db), ...(values.ledger ? ["--ledger", resolve(values.ledger)] : [])];
  const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "inherit"], env: process.env });
  children.push(child);
  return new Promise((done, fail) => {
    let text = "";
    child.stdout.setEncoding("utf8").on("data", (chunk) => {
      text += chunk;
      const listening = /listening on (http:\/\/\S+)/.exec(text);
      if (listening) done({ child, url: listening[1] });
      else if (/worker \S+ running/.test(text)) done({ child, url: undefined });
    });
    child.once("exit", (code) => fail(new Error(`${role} exited (${code}) before it was ready:\n${text}`)));
  });
}

const stopAll = () => {
  for (const child of children) child.kill("SIGTERM");
  process.exit(0);
};
process.once("SIGINT", stopAll);
process.once("SIGTERM", stopAll);

// The worker first: it migrates nothing (SQLite makes its tables on open), but it is the one that runs the agent.
await start("worker");
const replicas = await Promise.all([start("replica"), start("replica")]);
for (const { child, url } of replicas) console.log(`replica ${new URL(url).host} pid ${child.pid}`);
const { startProxy } = await import(pathToFileURL(join(root, "node_modules", ".cache", "jianmu-examples", "examples", "web", "proxy.js")).href);
const proxy = await startProxy(replicas.map(({ url }) => url), Number(values.port));
console.log(`listening on ${proxy.url}`);
