import type { z } from "zod";
import { HttpError } from "./errors.js";

/**
 * Read a JSON request body, at most `limit` bytes, and check it against a schema. Every way it can
 * be wrong is an HttpError naming the problem (413, 415, 400), raised before anything is applied.
 */
export async function readJsonBody<S extends z.ZodType>(request: Request, schema: S, limit: number): Promise<z.infer<S>> {
  const type = request.headers.get("content-type") ?? "";
  if (!/^application\/json\b/i.test(type)) {
    throw new HttpError(415, "unsupported_media_type", `send the body as JSON with content-type: application/json (got ${type === "" ? "no content-type" : JSON.stringify(type)})`);
  }
  const declared = Number(request.headers.get("content-length") ?? NaN);
  if (Number.isFinite(declared) && declared > limit) throw tooLarge(limit);
  const text = await readLimited(request, limit);
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

/** The body as text, stopping as soon as it passes the limit. */
async function readLimited(request: Request, limit: number): Promise<string> {
  if (!request.body) return "";
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
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
