import { ModelClient } from "../../index.js";
import type { RunStore } from "../../queue/run-store.js";
import type { IdentifiedRunEvent } from "../../http.js";
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

/** Each id once, in increasing order, with no gap from the first. */
export function expectConsecutive(events: readonly IdentifiedRunEvent[], from = 1): void {
  const ids = events.map((event) => Number(event.id));
  const expected = ids.map((_, i) => from + i);
  if (JSON.stringify(ids) !== JSON.stringify(expected)) throw new Error(`event ids ${ids.join(",")} are not ${expected.join(",")}`);
}
