#!/usr/bin/env node
// `npm run example:web`: build the page (Vite + React) and the server (the project's TypeScript,
// as examples/run.mjs does), then serve both on http://127.0.0.1:5178/.
//
//   node examples/web/start.mjs [--port 5178] [--db .jianmu/web-example.db] [--ledger file] [--no-build] [--build-only]
//     [--role single|replica|worker]   (replica and worker share the run queue in --db; see cluster.mjs)
import { spawnSync } from "node:child_process";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, "../..");
const cache = join(root, "node_modules", ".cache");
const pageDir = join(cache, "jianmu-web-example");

const { values } = parseArgs({
  options: {
    port: { type: "string", default: "5178" },
    db: { type: "string", default: join(root, ".jianmu", "web-example.db") },
    ledger: { type: "string" },
    "delay-ms": { type: "string" },
    "no-build": { type: "boolean", default: false },
    "build-only": { type: "boolean", default: false },
    role: { type: "string", default: "single" },
  },
});

if (!values["no-build"]) {
  const built = spawnSync(process.execPath, [join(root, "node_modules", "typescript", "bin", "tsc"), "-p", join(root, "examples", "tsconfig.json")], { stdio: "inherit" });
  if (built.status !== 0) process.exit(built.status ?? 1);
  const { build } = await import("vite");
  const { default: react } = await import("@vitejs/plugin-react");
  await build({ root: here, configFile: false, logLevel: "warn", plugins: [react()], build: { outDir: pageDir, emptyOutDir: true } });
  if (values["build-only"]) process.exit(0);
}

const { main } = await import(pathToFileURL(join(cache, "jianmu-examples", "examples", "web", "server.js")).href);
const server = await main({
  port: Number(values.port),
  dbPath: resolve(values.db),
  pageDir,
  ...(values.ledger ? { ledgerPath: resolve(values.ledger) } : {}),
  ...(values["delay-ms"] ? { delayMs: Number(values["delay-ms"]) } : {}),
  role: values.role,
});
const stop = () => server.close().then(() => process.exit(0));
process.once("SIGINT", stop);
process.once("SIGTERM", stop);
