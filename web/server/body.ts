import type { z } from "zod";
import { HttpError } from "./errors.js";

/**
 * Read a JSON request body, at most `limit` bytes, and check it against a schema. Every way it can
 * be wrong is an HttpError naming the problem (413, 415, 400), raised before anything is applied.
 */
export async function readJsonBody<S extends z.ZodType>(request: Request, schema: S, limit: number, timeoutMs = 10_000): Promise<z.infer<S>> {
  const type = request.headers.get("content-type") ?? "";
  if (!/^application\/json\b/i.test(type)) {
    throw new HttpError(415, "unsupported_media_type", `send the body as JSON with content-type: application/json (got ${type === "" ? "no content-type" : JSON.stringify(type)})`);
  }
  const declared = Number(request.headers.get("content-length") ?? NaN);
  if (Number.isFinite(declared) && declared > limit) throw tooLarge(limit);
  const text = await readLimited(request, limit, timeoutMs);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new HttpError(400, "malformed_json", `the body is not valid JSON (${error instanceof Error ? error.message : String(error)})`);
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const field = issue.path.map(String).join(".");
    throw new HttpError(400, "invalid_body", `${field === "" ? "the body" : field}: ${issue.message}`, field === "" ? undefined : field);
  }
  return parsed.data;
}

function tooLarge(limit: number): HttpError {
  return new HttpError(413, "body_too_large", `the body is larger than ${limit} bytes (raise agentHandler({ maxBodyBytes }) if this is intended)`);
}

/**
 * The body as text, stopping as soon as it passes the limit or the time: a client that sends slowly
 * (or not at all) holds a connection for `timeoutMs` at most, not for Node's five-minute requestTimeout.
 * A client that goes away mid-body is its own business: a 400 nobody reads, not a server error to log.
 */
async function readLimited(request: Request, limit: number, timeoutMs: number): Promise<string> {
  if (!request.body) return "";
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { done, value } = await readBefore(reader, deadline, timeoutMs);
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      // Stop reading, but do not cancel: on Node that would destroy the socket before the 413 is
      // sent. The server discards the rest of the upload after the response.
      reader.releaseLock();
      throw tooLarge(limit);
    }
    chunks.push(value);
  }
  const all = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    all.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return new TextDecoder().decode(all);
}

async function readBefore(reader: ReadableStreamDefaultReader<Uint8Array>, deadline: number, timeoutMs: number): Promise<ReadableStreamReadResult<Uint8Array>> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new HttpError(408, "body_timeout", `the body did not arrive within ${timeoutMs} ms (agentHandler({ bodyTimeoutMs }))`)), Math.max(0, deadline - Date.now()));
  });
  try {
    const read = reader.read();
    // Released after a timeout, the pending read rejects: nobody waits for it then.
    read.catch(() => undefined);
    return await Promise.race([read, late]);
  } catch (error) {
    if (error instanceof HttpError) {
      reader.releaseLock();
      throw error;
    }
    throw new HttpError(400, "malformed_json", "the body could not be read: the client went away");
  } finally {
    clearTimeout(timer);
  }
}
