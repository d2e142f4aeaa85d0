import { readFileSync } from "node:fs";
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import { replies, type Reply, type Respond } from "./openai-server.js";

/*
 * Recorded Chat Completions, Responses API and Anthropic Messages API replies (test/fixtures/openai
 * and test/fixtures/anthropic, see their SOURCES.md) as replies for the test server. Five formats:
 * - `*.chunks.txt`: one chunk JSON per line, no `data:` prefix, no [DONE]: wrapped into SSE (a file
 *   of Responses or Messages events is sent as those servers send them: `event:` lines, no [DONE],
 *   one interaction per response or message in the file);
 * - `*.sse`, `*.bin`: raw SSE bodies, replayed byte for byte;
 * - `*.json`: one whole response body (or an `{"error": ...}` body);
 * - `*.yaml`: VCR cassettes, one or more request/response interactions.
 */

export type RecordingFormat = "chunks" | "sse" | "bin" | "json" | "cassette";

/**
 * Which API a recorded reply answers: Chat Completions (`POST /chat/completions`), Responses
 * (`POST /responses`) or Anthropic's Messages API (`POST /messages`, what `@ai-sdk/anthropic` sends
 * with the test server's base URL).
 */
export type RecordedApi = "chat" | "responses" | "messages";

/** The path of each API under the base URL, as its client requests it. */
const API_PATHS: Record<RecordedApi, string> = { chat: "/chat/completions", responses: "/responses", messages: "/messages" };
const API_NAMES: Record<RecordedApi, string> = { chat: "Chat Completions", responses: "Responses", messages: "Anthropic Messages" };

export interface RecordedInteraction {
  /** The API the reply answers (the loader always says): a replay refuses a request to the other one. */
  api?: RecordedApi;
  /** The JSON body the recording client sent, when the recording kept it (cassettes). */
  request?: Record<string, unknown>;
  reply: Reply;
  /** True when the reply is a stream: the client must ask for `stream: true` to read it. */
  stream: boolean;
}

export interface Recording {
  path: string;
  format: RecordingFormat;
  interactions: RecordedInteraction[];
}

export interface LoadOptions {
  /**
   * Status for a `.json` body. Default: 200, or 400 when the body is an `{"error": ...}` body
   * (the file does not say; 400 is what the one such recording was answered with).
   */
  status?: number;
  /**
   * The API a `.json` error body answers (default: "responses" for a response object, else "chat");
   * an error body does not say which API sent it.
   */
  api?: RecordedApi;
}

export function formatOf(path: string): RecordingFormat {
  if (path.endsWith(".chunks.txt")) return "chunks";
  if (path.endsWith(".sse")) return "sse";
  if (path.endsWith(".bin")) return "bin";
  if (path.endsWith(".json")) return "json";
  if (path.endsWith(".yaml") || path.endsWith(".yml")) return "cassette";
  throw new Error(`${path}: not a known recording format (.chunks.txt, .sse, .bin, .json, .yaml)`);
}

export function loadRecording(path: string, options: LoadOptions = {}): Recording {
  const format = formatOf(path);
  const text = readFileSync(path, "utf8");
  switch (format) {
    case "chunks": {
      const lines = text.split(/\r?\n/).filter((line) => line.trim() !== "");
      if (isResponsesEvent(lines[0])) return { path, format, interactions: namedEventInteractions(lines, "responses") };
      if (isMessagesEvent(lines[0])) return { path, format, interactions: namedEventInteractions(lines, "messages") };
      const body = lines.map((line) => `data: ${line}\n\n`).join("") + "data: [DONE]\n\n";
      return { path, format, interactions: [{ api: "chat", reply: replies.sse(body), stream: true }] };
    }
    case "sse":
    case "bin":
      return { path, format, interactions: [{ api: /^event: response\./m.test(text) ? "responses" : "chat", reply: replies.sse(text), stream: true }] };
    case "json": {
      const body: unknown = JSON.parse(text);
      const isError = typeof body === "object" && body !== null && "error" in body;
      const isResponse = typeof body === "object" && body !== null && (body as { object?: unknown }).object === "response";
      const api = options.api ?? (isResponse ? "responses" : "chat");
      return { path, format, interactions: [{ api, reply: replies.json(body, options.status ?? (isError ? 400 : 200)), stream: false }] };
    }
    case "cassette":
      return { path, format, interactions: readCassette(path, text) };
  }
}

/** A line of a Responses API event file: `{"type": "response.…"}` (or an `error` event). */
function isResponsesEvent(line: string | undefined): boolean {
  return line !== undefined && /^\{\s*"type"\s*:\s*"(response\.|error")/.test(line);
}

/** A line of an Anthropic Messages event file: the stream opens with `{"type": "message_start"}`. */
function isMessagesEvent(line: string | undefined): boolean {
  return line !== undefined && /^\{\s*"type"\s*:\s*"message_start"/.test(line);
}

/** The events after which a Responses or Messages server ends the body. */
const TERMINAL_EVENTS = new Set(["response.completed", "response.failed", "response.incomplete", "message_stop"]);

/**
 * Event lines as SSE bodies the way a Responses or Messages server sends them (`event: <type>`
 * before each `data:` line, no `[DONE]`), one interaction per response or message.
 */
function namedEventInteractions(lines: readonly string[], api: RecordedApi): RecordedInteraction[] {
  const interactions: RecordedInteraction[] = [];
  let body = "";
  for (const line of lines) {
    const type = (JSON.parse(line) as { type: string }).type;
    body += `event: ${type}\ndata: ${line}\n\n`;
    if (TERMINAL_EVENTS.has(type)) {
      interactions.push({ api, reply: replies.sse(body), stream: true });
      body = "";
    }
  }
  if (body !== "") interactions.push({ api, reply: replies.sse(body), stream: true });
  return interactions;
}

const HeaderValues = z.union([z.array(z.string()), z.string()]);
const CassetteSchema = z.object({
  interactions: z.array(
    z.object({
      request: z.object({ parsed_body: z.record(z.string(), z.unknown()).optional(), uri: z.string().optional() }).loose(),
      response: z
        .object({
          status: z.object({ code: z.number().int() }).loose(),
          headers: z.record(z.string(), HeaderValues).optional(),
          parsed_body: z.unknown().optional(),
          body: z.object({ string: z.string() }).loose().optional(),
        })
        .loose(),
    }),
  ),
});

/** Only these recorded headers matter to a client; the rest (cookies, CF ids...) are left behind. */
const KEPT_HEADERS = ["content-type", "retry-after", "retry-after-ms"];

function readCassette(path: string, text: string): RecordedInteraction[] {
  const parsed = CassetteSchema.safeParse(parseYaml(text));
  if (!parsed.success) throw new Error(`${path}: not a VCR cassette: ${parsed.error.issues[0]?.message ?? "bad shape"}`);
  return parsed.data.interactions.map((interaction) => {
    const { response } = interaction;
    const headers: Record<string, string> = {};
    for (const name of KEPT_HEADERS) {
      const value = response.headers?.[name];
      const first = Array.isArray(value) ? value[0] : value;
      if (first !== undefined) headers[name] = first;
    }
    const status = response.status.code;
    let reply: Reply;
    let stream = false;
    if (response.parsed_body !== undefined) {
      reply = { kind: "json", status, headers, body: response.parsed_body };
    } else {
      const body = response.body?.string ?? "";
      if ((headers["content-type"] ?? "").startsWith("text/event-stream")) {
        reply = { kind: "sse", status, headers, body };
        stream = true;
      } else {
        reply = { kind: "text", status, headers, body };
      }
    }
    const api: RecordedApi = interaction.request.uri?.endsWith(API_PATHS.responses) ? "responses" : "chat";
    const recorded: RecordedInteraction = { api, reply, stream };
    if (interaction.request.parsed_body !== undefined) recorded.request = interaction.request.parsed_body;
    return recorded;
  });
}

export interface ReplayOptions {
  /** Reply once the recording is used up. Default: a 500 saying so (the test then fails loudly). */
  whenExhausted?: Respond;
  /**
   * Answer a request only when its images, documents and audio (`image_url`, `file` and
   * `input_audio` parts, in order, with their bytes or URLs) are the ones the recorded request
   * carried; otherwise reply HTTP 400 naming the difference, as a server that got the wrong
   * input would fail. Interactions recorded without their request (not cassettes) are not checked.
   */
  checkMedia?: boolean;
}

/**
 * A `respond` function that answers with the interactions' replies, one per request, in order. A
 * request to the other API's path than the recording's gets a 404 naming both (and uses up its
 * interaction), so a test cannot pass by replaying one API's reply to the other's client.
 */
export function replayInteractions(interactions: readonly RecordedInteraction[], options: ReplayOptions = {}): Respond {
  let next = 0;
  return (request) => {
    const interaction = interactions[next];
    next += 1;
    if (interaction) {
      const expected = interaction.api === undefined ? undefined : API_PATHS[interaction.api];
      if (expected !== undefined && !request.path.endsWith(expected)) {
        return replies.error(404, `test server: the recording answers POST ${expected} (the ${API_NAMES[interaction.api!]} API); the request went to ${request.path}`);
      }
      if (options.checkMedia && interaction.request !== undefined) {
        const problem = mediaDifference(wireMediaOf(request.body), wireMediaOf(interaction.request));
        if (problem !== undefined) return replies.error(400, `test server: request ${request.index} ${problem}`);
      }
      return interaction.reply;
    }
    if (options.whenExhausted) return options.whenExhausted(request);
    return replies.error(500, `test server: the recording has only ${interactions.length} interaction(s); request ${request.index} has none`);
  };
}

/** Shorthand: load a recording file and replay it. */
export function replayRecording(path: string, options: LoadOptions & ReplayOptions = {}): Respond {
  return replayInteractions(loadRecording(path, options).interactions, options);
}

/** One image, document or audio part of a Chat Completions request, as `type: its bytes or URL`. */
export function wireMediaOf(body: unknown): string[] {
  const messages = (body as { messages?: unknown } | null)?.messages;
  if (!Array.isArray(messages)) return [];
  const media: string[] = [];
  for (const message of messages) {
    const content = (message as { content?: unknown } | null)?.content;
    if (!Array.isArray(content)) continue;
    for (const part of content as Record<string, unknown>[]) {
      const image = part["image_url"] as { url?: string } | undefined;
      const file = part["file"] as { file_data?: string; file_id?: string } | undefined;
      const audio = part["input_audio"] as { data?: string; format?: string } | undefined;
      if (part["type"] === "image_url") media.push(`image_url: ${image?.url ?? ""}`);
      else if (part["type"] === "file") media.push(`file: ${file?.file_data ?? file?.file_id ?? ""}`);
      else if (part["type"] === "input_audio") media.push(`input_audio (${audio?.format ?? "?"}): ${audio?.data ?? ""}`);
    }
  }
  return media;
}

function mediaDifference(received: readonly string[], recorded: readonly string[]): string | undefined {
  const short = (item: string) => (item.length > 72 ? `${item.slice(0, 60)}... (${item.length} characters)` : item);
  if (received.length !== recorded.length) {
    return `carried ${received.length} image/file/audio part(s) but the recorded request carried ${recorded.length}: ${received.map(short).join("; ") || "none"}`;
  }
  const index = received.findIndex((item, i) => item !== recorded[i]);
  if (index === -1) return undefined;
  return `media part ${index + 1} differs from the recorded request: got ${short(received[index]!)}, recorded ${short(recorded[index]!)}`;
}
