import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach } from "vitest";
import { z } from "zod";
import { createReactMachine, defineTool, ModelClient, requireApproval } from "../../index.js";
import { loadRecording } from "../../testing/recordings.js";
import { SqliteCheckpointStore } from "../../sqlite.js";
import { agentHandler, toNodeListener, type AgentHandler, type AgentHandlerOptions, type IdentifiedRunEvent } from "../../http.js";
import { parseRunEvent } from "../../web/protocol.js";
import { readSse } from "../../web/client/sse-reader.js";
import { scriptedTurns, startOpenAIServer, textTurn, type OpenAIServer } from "../../testing.js";
import { AGENT_NAME, createWebAssistant, webAssistantModel, type Payment } from "../../examples/web/agent.js";

/**
 * A real stack for the web tests: the loopback OpenAI-compatible server (scripted model, over
 * HTTP through the openai SDK), the payments agent journaling into a SQLite file, and
 * agentHandler behind Node's http server on a loopback port.
 */
export interface WebStack {
  base: string;
  handler: AgentHandler;
  store: SqliteCheckpointStore;
  dbPath: string;
  payments: Payment[];
  model: OpenAIServer;
  /** Stop the handler's runs (they stay parked in the store), the http server and the model. */
  stop(): Promise<void>;
}

export function tempDir(): { dir: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), "jianmu-web-"));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * A fresh temporary directory for each test of the file (`temp.dir`), and cleanups a test registers,
 * run in reverse order after it, before the directory goes.
 */
export function scratchPerTest(): { readonly temp: { dir: string }; cleanups: (() => Promise<void> | void)[] } {
  let current: ReturnType<typeof tempDir> | undefined;
  const cleanups: (() => Promise<void> | void)[] = [];
  beforeEach(() => {
    current = tempDir();
  });
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    current?.remove();
  });
  return {
    temp: {
      get dir() {
        if (!current) throw new Error("scratchPerTest: temp.dir is there only while a test runs");
        return current.dir;
      },
    },
    cleanups,
  };
}

type NodeListener = (req: IncomingMessage, res: ServerResponse) => void;

/** `around` serves more than the handler on the same origin (a page, `handler.aiSdk` at /api/chat); default: the handler alone. */
export async function startStack(dbPath: string, extra: Partial<AgentHandlerOptions> = {}, around?: (api: NodeListener, handler: AgentHandler) => NodeListener): Promise<WebStack> {
  const model = await startOpenAIServer({ respond: webAssistantModel().respond });
  const store = new SqliteCheckpointStore({ path: dbPath });
  const payments: Payment[] = [];
  const modelClient = ModelClient.resolve({ baseURL: model.baseURL, apiKey: "test", model: "gpt-4o-mini" });
  const machine = createWebAssistant({ modelClient, journal: store, onPayment: (p) => payments.push(p) });
  const replica = await startReplica({ agents: { [AGENT_NAME]: machine }, store, ...extra }, around);
  return {
    base: replica.base,
    handler: replica.handler,
    store,
    dbPath,
    payments,
    model,
    async stop() {
      await replica.stop();
      store.close();
      await model.close();
    },
  };
}

export interface Replica {
  base: string;
  handler: AgentHandler;
  /** Close the handler (its runs stay in the store), then the http server. */
  stop(): Promise<void>;
}

/** agentHandler at `/api` behind Node's http server on a loopback port (`around`: see startStack). */
export async function startReplica(options: AgentHandlerOptions, around?: (api: NodeListener, handler: AgentHandler) => NodeListener): Promise<Replica> {
  const handler = agentHandler({ basePath: "/api", ...options });
  const api = toNodeListener(handler);
  const server: Server = createServer(around ? around(api, handler) : api);
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

/** Read a run's SSE response event by event (checked against the protocol's schemas). */
export class EventReader {
  readonly events: IdentifiedRunEvent[] = [];
  private readonly iterator: AsyncGenerator<{ id: string | undefined; event: string; data: string }>;
  ended = false;

  constructor(private readonly response: Response) {
    if (!response.body) throw new Error("the response has no body");
    this.iterator = readSse(response.body);
  }

  /** Read until an event of this type arrives (or the stream ends: then it throws). */
  async until(type: IdentifiedRunEvent["type"], where: (event: IdentifiedRunEvent) => boolean = () => true): Promise<IdentifiedRunEvent> {
    for (;;) {
      const next = await this.iterator.next();
      if (next.done) {
        this.ended = true;
        throw new Error(`the stream ended before ${type}; got ${this.events.map((e) => e.type).join(", ")}`);
      }
      const parsed = parseRunEvent(next.value.event, JSON.parse(next.value.data));
      if (!parsed) throw new Error(`unknown event ${next.value.event}`);
      const event = { ...parsed, id: next.value.id! } as IdentifiedRunEvent;
      this.events.push(event);
      if (event.type === type && where(event)) return event;
    }
  }

  /** Read to the end of the stream. */
  async rest(): Promise<IdentifiedRunEvent[]> {
    for (;;) {
      const next = await this.iterator.next();
      if (next.done) {
        this.ended = true;
        return this.events;
      }
      const parsed = parseRunEvent(next.value.event, JSON.parse(next.value.data));
      if (parsed) this.events.push({ ...parsed, id: next.value.id! } as IdentifiedRunEvent);
    }
  }

  /** Stop reading and hang up, as a closed browser tab would. */
  async close(): Promise<void> {
    await this.iterator.return(undefined);
    await this.response.body?.cancel();
  }
}

export function postJson(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
}

export const TASK = "Please pay invoice INV-1042 from Acme GmbH: EUR 1,250.";

/** One stack for a test file: started before its tests (on a SQLite file in a fresh folder), stopped after. */
export function stackPerFile(): { stack: WebStack; dir: string } {
  const shared = {} as { stack: WebStack; dir: string };
  let temp: ReturnType<typeof tempDir> | undefined;
  beforeAll(async () => {
    temp = tempDir();
    shared.dir = temp.dir;
    shared.stack = await startStack(join(temp.dir, "runs.db"));
  });
  afterAll(async () => {
    await shared.stack?.stop();
    temp?.remove();
  });
  return shared;
}

/**
 * A reasoning model behind an in-memory handler: the agent `weather` (its one tool needs approval)
 * on a real DeepSeek reasoner turn (vercel-ai's recording: reasoning, then a weather call for San
 * Francisco, id call_00_ioIn7yN9p1ZOMNpDLwd4MgAF), then a scripted answer.
 */
export async function startWeatherHandler(): Promise<{ handler: AgentHandler; close(): Promise<void> }> {
  const recorded = loadRecording(join(import.meta.dirname, "../fixtures/openai/vercel-ai/deepseek/deepseek-tool-call.chunks.txt")).interactions[0]!.reply;
  const model = await startOpenAIServer({ respond: scriptedTurns([recorded, textTurn("It is 18 degrees and sunny in San Francisco.")]).respond });
  const weather = defineTool({ name: "weather", description: "The weather in a city.", parameters: z.object({ location: z.string() }), execute: ({ location }) => `18 degrees and sunny in ${location}` });
  const machine = createReactMachine({
    name: "Weather",
    modelClient: ModelClient.resolve({ baseURL: model.baseURL, apiKey: "test", model: "deepseek-reasoner" }),
    tools: [weather],
    configFile: false,
    constraints: [requireApproval({ tools: ["weather"] })],
  });
  const handler = agentHandler({ agents: { weather: machine }, store: false });
  return {
    handler,
    async close() {
      await handler.close();
      await model.close();
    },
  };
}
