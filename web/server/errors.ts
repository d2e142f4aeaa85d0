import type { ErrorBody, ErrorCode } from "../protocol.js";
import { JianmuError } from "../../tools/jianmu-error.js";

/** A request the handler refuses: becomes a JSON error response with this status. */
export class HttpError extends JianmuError {
  static override readonly errorCode = "HTTP_ERROR";
  override name = "HttpError";
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    readonly field?: string,
    /** 405: the methods the path takes (the `allow` header). */
    readonly allow?: string,
  ) {
    super(message);
  }
}

export function jsonResponse(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json; charset=utf-8", "cache-control": "no-store", ...headers } });
}

export function errorResponse(error: HttpError): Response {
  const body: ErrorBody = { error: { code: error.code, message: error.message, ...(error.field !== undefined ? { field: error.field } : {}) } };
  return jsonResponse(body, error.status, error.allow !== undefined ? { allow: error.allow } : {});
}
