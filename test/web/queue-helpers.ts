import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { ModelClient } from "../../index.js";
import type { RunStore } from "../../queue/run-store.js";
import { agentHandler, toNodeListener, type AgentHandler, type AgentHandlerOptions, type IdentifiedRunEvent } from "../../http.js";
import { startOpenAIServer, type OpenAIServer } from "../../testing.js";
import { AGENT_NAME, createWebAssistant, webAssistantModel, type Payment } from "../../examples/web/agent.js";

/** The payments agent journaling into a run store, its model on the loopback OpenAI-compatible server. */
export async function paymentsAgent(store: RunStore, pacing: { delayMs?: number } = {}) {
  const model: OpenAIServer = await startOpenAIServer({ respond: webAssistantModel(pacing).respond });
  const payments: Payment[] = [];
  const modelClient = ModelClient.resolve({ baseURL: model.baseURL, apiKey: "test", model: "gpt-4o-mini" });
  const machine = createWebAssistant({ modelClient, journal: store, onPayment: (p) => payments.push(p) });
  return { agents: { [AGENT_NAME]: machine }, payments, model };
}

export interface Replica {
  base: string;
  handler: AgentHandler;
  stop(): Promise<void>;
}

/** agentHandler behind Node's http server on a loopback port. */
export async function startReplica(options: AgentHandlerOptions): Promise<Replica> {
  const handler = agentHandler({ basePath: "/api", ...options });
  const server: Server = createServer(toNodeListener(handler));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    base: `http://127.0.0.1:${port}/api`,
    handler,
    async stop() {
      await handler.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Each id once, in increasing order, with no gap from the first. */
export function expectConsecutive(events: readonly IdentifiedRunEvent[], from = 1): void {
  const ids = events.map((event) => Number(event.id));
  const expected = ids.map((_, i) => from + i);
  if (JSON.stringify(ids) !== JSON.stringify(expected)) throw new Error(`event ids ${ids.join(",")} are not ${expected.join(",")}`);
}
