import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inspect } from "node:util";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { InspectionEvent } from "xstate";
import { z } from "zod";
import { human } from "../../actors/messages.js";
import { resolveModelClient } from "../../actors/openai/openai-model-client.js";
import { SqliteCheckpointStore } from "../../machines/persistence/checkpoints/sqlite-store.js";
import type { AgentOutput } from "../../machines/contract/context.js";
import type { AgentEmitted } from "../../machines/contract/events.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { runAgent } from "../../machines/runner.js";
import { replies, startOpenAIServer, type OpenAIServer, type Reply } from "../../testing/openai-server.js";
import { defineTool } from "../../tools/tool.js";
import { recordRun } from "../../visualize/recorder.js";
import { FINAL_TEXT, finalTextStream, roundOf, toolCallStream } from "./fault-plan.js";

/*
 * API keys never leave the client: a run with a recognizable fake key against a server that
 * fails in the ways that tend to quote keys (401 "Incorrect API key provided: sk-...", errors
 * echoing the Authorization header, a key in the base URL's query) is searched artifact by
 * artifact: output, emitted events, inspection events, errors, persisted checkpoints (the SQLite
 * file on disk), console and stdout/stderr, a run recording (visualize/recorder.ts) and the
 * OpenTelemetry spans of both runs, content included (jianmu/otel).
 */

const KEY = "sk-reliability-KEY-3f9a2b7c1d0e4f5a6b8c";
const FALLBACK_KEY = "sk-fallback-KEY-77aa88bb99cc00dd11ee";
/** Azure-style: the key in the query string of the base URL. */
const QUERY_KEY = "azq-QUERYKEY-5e6f7a8b9c0d";
const SECRETS = [KEY, FALLBACK_KEY, QUERY_KEY, KEY.slice(0, 20), KEY.slice(-16)];

/** The server quotes whatever Authorization header it got, the way misconfigured proxies do. */
function echoingError(status: number, auth: string | undefined): Reply {
  return replies.error(status, `Incorrect API key provided: ${auth?.replace(/^Bearer /, "") ?? "(none)"}; header was "${auth}"`, { code: "invalid_api_key" });
}

let primary: OpenAIServer;
let fallback: OpenAIServer;
let work: string;
let plan: ((auth: string | undefined, round: 0 | 1) => Reply)[] = [];

beforeAll(async () => {
  const respond = (request: Parameters<Parameters<typeof startOpenAIServer>[0]["respond"]>[0]) => {
    const auth = request.headers.authorization;
    const step = plan.shift();
    return step ? step(auth, roundOf(request)) : replies.sse(roundOf(request) === 0 ? toolCallStream() : finalTextStream());
  };
  primary = await startOpenAIServer({ respond });
  fallback = await startOpenAIServer({ respond });
  work = mkdtempSync(join(tmpdir(), "jianmu-secrets-"));
});
afterAll(async () => {
  await Promise.all([primary.close(), fallback.close()]);
  rmSync(work, { recursive: true, force: true });
});

/** Every string written to the console, stdout or stderr while `fn` runs. */
async function capturingOutput<T>(fn: () => Promise<T>): Promise<{ result: T; written: string[] }> {
  const written: string[] = [];
  const methods = ["log", "info", "warn", "error", "debug", "trace"] as const;
  const saved = methods.map((m) => console[m]);
  const { write: out } = process.stdout;
  const { write: err } = process.stderr;
  for (const m of methods) console[m] = (...args: unknown[]) => void written.push(args.map((a) => (typeof a === "string" ? a : inspect(a, { depth: 8 }))).join(" "));
  process.stdout.write = ((chunk: unknown) => (written.push(String(chunk)), true)) as typeof process.stdout.write;
  process.stderr.write = ((chunk: unknown) => (written.push(String(chunk)), true)) as typeof process.stderr.write;
  try {
    return { result: await fn(), written };
  } finally {
    methods.forEach((m, i) => (console[m] = saved[i]!));
    process.stdout.write = out;
    process.stderr.write = err;
  }
}

function expectNoSecret(label: string, text: string): void {
  for (const secret of SECRETS) {
    if (text.includes(secret)) throw new Error(`${label} contains the secret ${secret.slice(0, 12)}...: ${text.slice(Math.max(0, text.indexOf(secret) - 120), text.indexOf(secret) + 60)}`);
  }
}

const lookup = defineTool({ name: "lookup", description: "Look up the weather", parameters: z.object({ city: z.string() }), execute: ({ city }) => `${city}: sunny` });

function client(options: { fallbacks?: boolean } = {}) {
  return resolveModelClient({
    baseURL: `${primary.baseURL}?api-key=${QUERY_KEY}`,
    apiKey: KEY,
    model: "secret-model",
    timeoutMs: 5_000,
    resilience: { maxRetries: 3, initialDelayMs: 1, maxDelayMs: 100, jitter: 0 },
    ...(options.fallbacks ? { fallbacks: [{ baseURL: fallback.baseURL, apiKey: FALLBACK_KEY }] } : {}),
  });
}

describe("API keys in the artifacts of a run", () => {
  it("appear in no output, event, inspection event, error, checkpoint, console line or recording", async () => {
    const db = join(work, "runs.db");
    const store = new SqliteCheckpointStore({ path: db });
    const emitted: AgentEmitted[] = [];
    const inspected: string[] = [];
    const keepInspection = (event: InspectionEvent) => {
      // What an inspector ships: the event and the snapshot, not the live actor objects (which hold the client in memory).
      const snapshot = "snapshot" in event ? (event.snapshot as { error?: unknown }) : undefined;
      inspected.push(JSON.stringify({ type: event.type, event: (event as { event?: unknown }).event, snapshot }));
      // A failed child's snapshot holds the error object itself: JSON would show {}, so look inside it.
      if (snapshot?.error !== undefined) inspected.push(inspect(snapshot.error, { depth: 8, showHidden: true }));
    };
    const outputs: AgentOutput[] = [];
    const spans = new InMemorySpanExporter();
    const tracer = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] }).getTracer("secrets");

    const { result, written } = await capturingOutput(async () => {
      // Run 1: a 401 quoting the key on the primary, a 500 quoting it on the fallback: fails for good.
      plan = [(auth) => echoingError(401, auth), ...Array.from({ length: 4 }, () => (auth: string | undefined) => echoingError(500, auth))];
      const failing = createReactMachine({ modelClient: client({ fallbacks: true }), tools: [lookup], journal: store });
      outputs.push(await runAgent(failing, { messages: [human("weather?")], runId: "run-failing" }, { onEvent: (e) => emitted.push(e), inspect: keepInspection, checkpoints: store, tracer, traceContent: true }));

      // Run 2: a 429 and a reset quoting nothing, a 503 quoting the key, then success; recorded to a file.
      plan = [() => replies.rateLimited({ ms: 1 }), () => replies.destroy(), (auth) => echoingError(503, auth)];
      const recovering = createReactMachine({ modelClient: client(), tools: [lookup], journal: store });
      const recorded = await recordRun(recovering, { messages: [human("weather in Oslo?")], runId: "run-recovering" }, {
        path: join(work, "recording.jsonl"),
        onEvent: (e) => emitted.push(e),
        inspect: keepInspection,
        checkpoints: store,
        tracer,
        traceContent: true,
      });
      outputs.push(recorded.output);

      // A direct call of the client that fails: the thrown error with its cause chain and stack.
      plan = [(auth) => echoingError(401, auth)];
      const error = await client()
        .complete({ messages: [human("hi")], tools: [] })
        .catch((e: unknown) => e);
      return [inspect(error, { depth: 12, showHidden: true }), String((error as Error).stack), JSON.stringify(error)];
    });
    const thrownError = result.join("\n");
    expect(thrownError).toMatch(/ModelError: model call failed: .*HTTP 401: Incorrect API key provided: /);
    store.close();

    // The key was really used: the servers got it (so finding nothing below means something).
    expect(primary.requests.some((r) => r.headers.authorization === `Bearer ${KEY}`)).toBe(true);
    expect(fallback.requests.some((r) => r.headers.authorization === `Bearer ${FALLBACK_KEY}`)).toBe(true);
    expect(primary.requests.some((r) => r.path.includes(QUERY_KEY))).toBe(true);
    // The runs did what the plan says, and their errors still explain what went wrong.
    expect(outputs.map((o) => o.status)).toEqual(["failed", "succeeded"]);
    expect(outputs[0]!.termination?.error?.message).toMatch(/Incorrect API key provided: .*\[redacted\]/);
    expect(outputs[1]!.finalAnswer).toBe(FINAL_TEXT);
    expect(emitted.some((e) => e.type === "model.call.failed" && /Incorrect API key/.test(e.message))).toBe(true);

    const recording = readFileSync(join(work, "recording.jsonl"), "utf8");
    expect(recording.length).toBeGreaterThan(1_000);
    const dbFiles = readdirSync(work).filter((f) => f.startsWith("runs.db"));
    expect(dbFiles.length).toBeGreaterThan(0);

    // The search itself finds a key where there is one.
    expect(() => expectNoSecret("the requests the server got", JSON.stringify(primary.requests.map((r) => r.headers)))).toThrow(/contains the secret/);
    expectNoSecret("the outputs", JSON.stringify(outputs));
    expectNoSecret("the emitted events", JSON.stringify(emitted));
    expectNoSecret("the inspection events", inspected.join("\n"));
    expectNoSecret("the console and stdio", written.join("\n"));
    expectNoSecret("the thrown error (inspected with its cause chain, stack and JSON)", thrownError);
    expectNoSecret("the recording", recording);
    const traced = JSON.stringify(
      spans.getFinishedSpans().map((span) => ({ name: span.name, attributes: span.attributes, events: span.events, status: span.status, links: span.links })),
    );
    expect(traced).toMatch(/Incorrect API key provided: .*\[redacted\]/);
    expectNoSecret("the OpenTelemetry spans (with content)", traced);
    // The checkpoint store's files byte for byte (SQLite database, WAL and shared memory).
    for (const file of dbFiles) if (existsSync(join(work, file))) expectNoSecret(`the checkpoint file ${file}`, readFileSync(join(work, file)).toString("latin1"));
  }, 60_000);
});
