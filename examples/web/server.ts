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
import { SqliteCheckpointStore } from "../../sqlite.js";
import { agentHandler, toNodeListener } from "../../http.js";
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
}

export async function main(options: WebServerOptions) {
  const log = options.log ?? console.log;
  const endpoint = await connectModel(webAssistantModel({ delayMs: options.delayMs ?? 60 }), { mode: options.mode ?? "auto" });
  log(endpoint.banner);
  const store = new SqliteCheckpointStore({ path: options.dbPath });
  const machine = createWebAssistant({
    modelClient: endpoint.modelClient,
    journal: store,
    onPayment: (payment) => {
      log(`paid ${payment.invoice}: EUR ${payment.amountEur}`);
      if (options.ledgerPath) appendFileSync(options.ledgerPath, `${JSON.stringify({ ...payment, pid: process.pid })}\n`);
    },
  });
  // A photo of an invoice can go with the task: room for a few megabytes of image in a request.
  const api = toNodeListener(agentHandler({ agents: { [AGENT_NAME]: machine }, store, basePath: "/api", maxBodyBytes: 16 * 1024 * 1024 }));
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
      store.close();
      await endpoint.close();
    },
  };
}
