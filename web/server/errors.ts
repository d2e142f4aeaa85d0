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
    /** 500: the id under which the server logged what went wrong (see `loggedFailure`). */
    readonly errorId?: string,
  ) {
    super(message);
  }
}

export function jsonResponse(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json; charset=utf-8", "cache-control": "no-store", ...headers } });
}

/**
 * A failure whose text the client must not read (a store's message may name the database, its host
 * or a password): handed to `onError` under a fresh id, and answered 500 with only that id, so an
 * operator can find the log line a client reports.
 */
export function loggedFailure(code: "internal_error" | "store_failed", what: string, error: unknown, onError: (error: Error) => void): HttpError {
  const errorId = crypto.randomUUID();
  const cause = error instanceof Error ? error : new Error(String(error));
  onError(new Error(`error ${errorId}: ${cause.message}`, { cause }));
  return new HttpError(500, code, `${what}; the server's log says why under error ${errorId}`, undefined, undefined, errorId);
}

/** The JSON body of an error answer (ErrorBodySchema). */
export function errorBody(error: HttpError): ErrorBody {
  const optional = { ...(error.field !== undefined ? { field: error.field } : {}), ...(error.errorId !== undefined ? { errorId: error.errorId } : {}) };
  return { error: { code: error.code, message: error.message, ...optional } };
}

export function errorResponse(error: HttpError): Response {
  return jsonResponse(errorBody(error), error.status, error.allow !== undefined ? { allow: error.allow } : {});
}
