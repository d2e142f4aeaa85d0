import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inspect } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createActor } from "xstate";
import { z } from "zod";
import { human } from "../../actors/messages.js";
import { resolveModelClient } from "../../actors/openai/openai-model-client.js";
import { MemoryCheckpointStore } from "../../machines/persistence/checkpoints/memory-store.js";
import { SqliteCheckpointStore } from "../../machines/persistence/checkpoints/sqlite-store.js";
import type { AgentEmitted } from "../../machines/contract/events.js";
import { persistAgent, type PersistedAgent } from "../../machines/persistence/persistence.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { runAgent } from "../../machines/runner.js";
import { replies, startOpenAIServer, type OpenAIServer, type ReceivedRequest, type Reply } from "../../testing/openai-server.js";
import { defineTool } from "../../tools/tool.js";
import { recordRun } from "../../visualize/recorder.js";
import { renderViewer } from "../../visualize/viewer.js";
import { finalTextStream, roundOf, toolCallStream } from "./fault-plan.js";

/*
 * Keys quoted back by a server in places the first secrets test does not cover (a plain-text stream
 * line, a response header, a body that is not JSON), and keys given in configuration
 * (`config.resilience` fallbacks), which must never be written into a snapshot, a checkpoint, a
 * recording or a viewer page: they live outside the machine's context and its actors' inputs.
 */

const KEY = "sk-quoted-KEY-9a8b7c6d5e4f3a2b1c0d";
const CONFIG_KEY = "cfg-FALLBACK-KEY-1122334455667788";
const CONFIG_QUERY_KEY = "cfgq-QUERY-99887766";
const SECRETS = [KEY, CONFIG_KEY, CONFIG_QUERY_KEY, KEY.slice(0, 18), KEY.slice(-14), CONFIG_KEY.slice(4)];

function expectNoSecret(label: string, text: string): void {
  for (const secret of SECRETS) {
    if (text.includes(secret)) throw new Error(`${label} contains the secret ${secret.slice(0, 10)}...: ${text.slice(Math.max(0, text.indexOf(secret) - 100), text.indexOf(secret) + 40)}`);
  }
}

let primary: OpenAIServer;
let fallback: OpenAIServer;
let work: string;
let plan: ((request: ReceivedRequest) => Reply)[] = [];
const normal = (request: ReceivedRequest) => replies.sse(roundOf(request) === 0 ? toolCallStream() : finalTextStream());

beforeAll(async () => {
  primary = await startOpenAIServer({ respond: (request) => (plan.shift() ?? normal)(request) });
  fallback = await startOpenAIServer({ respond: normal });
  work = mkdtempSync(join(tmpdir(), "jianmu-secrets-quoted-"));
});
afterAll(async () => {
  await Promise.all([primary.close(), fallback.close()]);
  rmSync(work, { recursive: true, force: true });
});

async function capturingOutput<T>(fn: () => Promise<T>): Promise<{ result: T; written: string[] }> {
  const written: string[] = [];
  const methods = ["log", "info", "warn", "error", "debug", "trace"] as const;
  const saved = methods.map((m) => console[m]);
  for (const m of methods) console[m] = (...args: unknown[]) => void written.push(args.map((a) => (typeof a === "string" ? a : inspect(a, { depth: 8 }))).join(" "));
  try {
    return { result: await fn(), written };
  } finally {
    methods.forEach((m, i) => (console[m] = saved[i]!));
  }
}

/** A checkpoint store that keeps every record it was given, as text. */
class KeepingStore extends MemoryCheckpointStore {
  readonly texts: string[] = [];
  override save(runId: string, record: PersistedAgent): void {
    this.texts.push(JSON.stringify(record));
    super.save(runId, record);
  }
}

const lookup = defineTool({ name: "lookup", description: "Look up the weather", parameters: z.object({ city: z.string() }), execute: ({ city }) => `${city}: sunny` });
const auth = (request: ReceivedRequest) => request.headers.authorization ?? "(none)";

describe("keys a server quotes back", () => {
  const quoting: [string, (request: ReceivedRequest) => Reply][] = [
    ["a plain-text stream line", (r) => replies.sse(`data: Incorrect API key provided: ${auth(r)}\n\n`)],
    ["a plain-text line after the first chunk", (r) => replies.sse(`data: {"choices":[{"index":0,"delta":{"role":"assistant"}}]}\n\ndata: denied for ${auth(r)}\n\n`)],
    ["a response header (and a body that says nothing)", (r) => replies.error(500, "upstream failed", { headers: { "x-debug-authorization": auth(r), "x-api-key": KEY } })],
    ["a text body on a JSON error", (r) => ({ kind: "text", status: 401, body: `401 Unauthorized: ${auth(r)}` })],
    ["a JSON content type whose body is not JSON", (r) => ({ kind: "text", status: 200, headers: { "content-type": "application/json" }, body: `{"error": "bad key ${auth(r)}"` })],
    ["an error event in the stream", (r) => replies.sse(`data: ${JSON.stringify({ error: { message: `key ${auth(r)} revoked`, code: 401 } })}\n\n`)],
  ];

  it.each(quoting)("%s: redacted before the console, events, errors, recordings and checkpoints", async (label, reply) => {
    const db = join(work, `quoted-${label.replace(/\W+/g, "-")}.db`);
    const store = new SqliteCheckpointStore({ path: db });
    const emitted: AgentEmitted[] = [];
    const recording = join(work, `quoted-${label.replace(/\W+/g, "-")}.jsonl`);
    const { result, written } = await capturingOutput(async () => {
      plan = [reply, reply, reply];
      const model = resolveModelClient({ baseURL: primary.baseURL, apiKey: KEY, model: "m", stream: true, resilience: { maxRetries: 0, initialDelayMs: 1, maxDelayMs: 5, jitter: 0 } });
      const machine = createReactMachine({ modelClient: model, tools: [lookup], journal: store, configFile: false });
      const { output } = await recordRun(machine, { messages: [human("weather?")], runId: "run-quoted" }, { path: recording, onEvent: (e) => emitted.push(e), checkpoints: store });
      const direct = await model.complete({ messages: [human("hi")], tools: [] }).catch((e: unknown) => e);
      return { output, direct };
    });
    store.close();
    plan = [];
    // The key was really sent, and the run really failed on the quoting reply.
    expect(primary.requests.some((r) => r.headers.authorization === `Bearer ${KEY}`)).toBe(true);
    expect(result.output.status).toBe("failed");
    expect(result.output.termination?.reason).toBe("modelError");
    expectNoSecret("the output", JSON.stringify(result.output));
    expectNoSecret("the emitted events", JSON.stringify(emitted));
    expectNoSecret("the console", written.join("\n"));
    expectNoSecret("the thrown error", `${inspect(result.direct, { depth: 12, showHidden: true })}\n${String((result.direct as Error).stack)}\n${JSON.stringify(result.direct)}`);
    expectNoSecret("the recording", readFileSync(recording, "utf8"));
    expectNoSecret("the viewer page", await renderViewer(recording));
    for (const file of readdirSync(work).filter((f) => f.startsWith(`quoted-${label.replace(/\W+/g, "-")}.db`))) {
      if (existsSync(join(work, file))) expectNoSecret(`the checkpoint file ${file}`, readFileSync(join(work, file)).toString("latin1"));
    }
  });
});

describe("keys given in configuration", () => {
  it("config.resilience fallback keys reach the server but no snapshot, checkpoint, recording or viewer page", async () => {
    const store = new KeepingStore();
    const db = join(work, "config-keys.db");
    const sqlite = new SqliteCheckpointStore({ path: db });
    const recording = join(work, "config-keys.jsonl");
    const emitted: AgentEmitted[] = [];
    const snapshots: string[] = [];
    const { written } = await capturingOutput(async () => {
      // The primary refuses every call: each model call goes to the configured fallback.
      plan = Array.from({ length: 4 }, () => () => replies.error(401, "no"));
      const model = resolveModelClient({ baseURL: primary.baseURL, apiKey: KEY, model: "m", stream: true });
      const config = {
        resilience: { maxRetries: 0, fallbacks: [{ baseURL: `${fallback.baseURL}?api-key=${CONFIG_QUERY_KEY}`, apiKey: CONFIG_KEY, model: "fallback-model" }] },
      };
      const machine = createReactMachine({ modelClient: model, tools: [lookup], config, configFile: false, constraints: [() => ({ decision: "pending" })] });
      // Snapshots taken by hand at every state, the way an application may persist them.
      const actor = createActor(machine, { input: { messages: [human("weather?")], runId: "run-config" } });
      actor.subscribe(() => {
        if (actor.getSnapshot().status === "active") snapshots.push(JSON.stringify(persistAgent(actor)));
      });
      actor.start();
      await new Promise<void>((resolve) => actor.on("guard.approval.requested", () => resolve()));
      actor.stop();

      const recorded = await recordRun(machine, { messages: [human("weather?")], runId: "run-config-recorded" }, {
        path: recording,
        onEvent: (e) => emitted.push(e),
        checkpoints: store,
        onApproval: () => ({ approve: true }),
      });
      expect(recorded.output.status).toBe("succeeded");
      const again = await runAgent(machine, { messages: [human("weather?")], runId: "run-config-sqlite" }, { checkpoints: sqlite, onApproval: () => ({ approve: true }) });
      expect(again.status).toBe("succeeded");
    });
    sqlite.close();
    plan = [];
    // The fallback got the configured key and query: finding nothing below means something.
    expect(fallback.requests.some((r) => r.headers.authorization === `Bearer ${CONFIG_KEY}` && r.path.includes(CONFIG_QUERY_KEY))).toBe(true);
    expect(snapshots.length).toBeGreaterThan(2);
    expect(store.texts.length).toBeGreaterThan(2);
    // The fallback is still described in the snapshot, just without its key.
    expect(snapshots.some((s) => s.includes("fallback-model"))).toBe(true);
    expectNoSecret("the snapshots", snapshots.join("\n"));
    expectNoSecret("the checkpoints", store.texts.join("\n"));
    expectNoSecret("the emitted events", JSON.stringify(emitted));
    expectNoSecret("the console", written.join("\n"));
    expectNoSecret("the recording", readFileSync(recording, "utf8"));
    expectNoSecret("the viewer page", await renderViewer(recording));
    for (const file of readdirSync(work).filter((f) => f.startsWith("config-keys.db"))) {
      if (existsSync(join(work, file))) expectNoSecret(`the checkpoint file ${file}`, readFileSync(join(work, file)).toString("latin1"));
    }
  });
});
