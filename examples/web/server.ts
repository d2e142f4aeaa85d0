/**
 * The web example's server: agentHandler under /api (runs checkpointed in a SQLite file, so a run
 * waiting for approval survives a restart of this process) and the built page at /. Offline the
 * model is a loopback OpenAI-compatible server with a scripted accounts-payable model; with
 * OPENAI_API_KEY or OPENAI_BASE_URL set, the real model answers.
 *
 * Start it with `npm run example:web` (examples/web/start.mjs builds the page and this file first).
 */
import { appendFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { SqliteCheckpointStore, SqliteRunStore, startWorker } from "../../sqlite.js";
import { agentHandler, storeRunEvents, toNodeListener } from "../../http.js";
import { connectModel } from "../support/endpoint.js";
import { AGENT_NAME, createWebAssistant, webAssistantModel } from "./agent.js";
import { serveStatic } from "./static-files.js";

export interface WebServerOptions {
  /** 0 picks a free port. */
  port: number;
  host?: string;
  /** The SQLite file of checkpoints and the tool journal. */
  dbPath: string;
  /** The built page (vite build's outDir). */
  pageDir: string;
  /** Each payment is appended here as a JSON line (to count them across restarts). */
  ledgerPath?: string;
  /** Pause between the scripted model's chunks, so the answer visibly streams. */
  delayMs?: number;
  mode?: "auto" | "offline" | "live";
  log?: (line: string) => void;
  /**
   * `single` (default): one process, runs checkpointed in `dbPath`. With the run queue in `dbPath`
   * (a SqliteRunStore shared by several processes): `replica` serves HTTP only, `worker` runs the
   * agents and serves nothing (examples/web/cluster.mjs starts two replicas, a worker and a proxy).
   */
  role?: "single" | "replica" | "worker";
}

export async function main(options: WebServerOptions) {
  const log = options.log ?? console.log;
  const endpoint = await connectModel(webAssistantModel({ delayMs: options.delayMs ?? 60 }), { mode: options.mode ?? "auto" });
  log(endpoint.banner);
  const role = options.role ?? "single";
  const store = role === "single" ? new SqliteCheckpointStore({ path: options.dbPath }) : new SqliteRunStore({ path: options.dbPath, pollMs: 50 });
  const machine = createWebAssistant({
    modelClient: endpoint.modelClient,
    journal: store,
    onPayment: (payment) => {
      log(`paid ${payment.invoice}: EUR ${payment.amountEur}`);
      if (options.ledgerPath) appendFileSync(options.ledgerPath, `${JSON.stringify({ ...payment, pid: process.pid })}\n`);
    },
  });
  const agents = { [AGENT_NAME]: machine };
  if (store instanceof SqliteRunStore && role === "worker") {
    const worker = await startWorker({ store, agents, pollMs: 50, leaseMs: 3_000, observe: storeRunEvents(store) });
    log(`worker ${worker.id} running`);
    return {
      url: "",
      async close() {
        await worker.stop({ timeoutMs: 1_000 });
        await store.close();
        await endpoint.close();
      },
    };
  }
  // A photo of an invoice can go with the task: room for a few megabytes of image in a request.
  const handler = agentHandler({ agents, store, basePath: "/api", maxBodyBytes: 16 * 1024 * 1024, ...(role === "replica" ? { worker: false, streamPollMs: 50 } : {}) });
  const api = toNodeListener(handler);
  const page = serveStatic(options.pageDir);
  const server = createServer((req, res) => (req.url?.startsWith("/api/") ? api(req, res) : page(req, res)));
  await new Promise<void>((resolve) => server.listen(options.port, options.host ?? "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const url = `http://${options.host ?? "127.0.0.1"}:${port}/`;
  log(`listening on ${url}`);
  return {
    url,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await handler.close();
      await store.close();
      await endpoint.close();
    },
  };
}
