import type { ModelClient, ModelRequest } from "../../actors/model-client.js";
import { resolveModelClient } from "../../actors/openai/openai-model-client.js";
import type { AgentEmitted } from "../../machines/contract/events.js";
import type { MemoryCheckpointStore } from "../../machines/persistence/checkpoints/memory-store.js";
import { restoreAgent } from "../../machines/persistence/persistence.js";
import { createReactMachine, type ReactMachineOptions } from "../../machines/react-machine.js";
import { runAgent } from "../../machines/runner.js";
import { replies, startOpenAIServer, type OpenAIServer } from "../../testing/openai-server.js";

/*
 * The two processes of a restored run's spending tests (restored-call-spend, restored-summary-spend):
 * the first one's model never answers, and it stops (as if it died) while the run waits on it; the
 * next one resumes the saved run over a loopback server with the real client.
 */

/** What the loopback server reports for every call it answers. */
export const USAGE = { prompt_tokens: 40, completion_tokens: 7, total_tokens: 47 };

/** A loopback server that answers every request "done", with `USAGE`, at once. */
export function pricedServer(): Promise<OpenAIServer> {
  return startOpenAIServer({
    respond: () => replies.json({ id: "c", object: "chat.completion", created: 0, model: "priced-model", choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content: "done" } }], usage: USAGE }),
    keepRequests: true,
  });
}

/** A model that never answers, and the requests it was sent. */
export function silentModel(): { client: ModelClient; requests: ModelRequest[] } {
  const requests: ModelRequest[] = [];
  return { requests, client: { description: "a model that never answers", model: "priced-model", complete: (request) => (requests.push(request), new Promise(() => undefined)) } };
}

export type RestoredOptions = Pick<ReactMachineOptions, "config" | "tools">;

/** The next process: the agent over `server`, restored from `saved`; resolves with its output, its own loop.terminated and the requests it sent. */
export async function resumedOver(server: OpenAIServer, options: RestoredOptions, saved: unknown, checkpoints?: MemoryCheckpointStore) {
  const machine = createReactMachine({ ...options, modelClient: resolveModelClient({ baseURL: server.baseURL, apiKey: "test-key", model: "priced-model", stream: false, resilience: { maxRetries: 0 } }) });
  const events: AgentEmitted[] = [];
  const before = server.requests.length;
  const output = await runAgent(machine, {}, { snapshot: restoreAgent(machine, saved), onEvent: (event) => events.push(event), ...(checkpoints ? { checkpoints } : {}) });
  const terminated = events.find((event): event is Extract<AgentEmitted, { type: "loop.terminated" }> => event.type === "loop.terminated" && event.agentPath === undefined);
  return { output, terminated, sent: server.requests.slice(before).map((r) => r.body as { max_tokens?: number; max_completion_tokens?: number }) };
}
