import type { IncomingMessage, ServerResponse } from "node:http";
import { Readable } from "node:stream";
import { errorBody, loggedFailure } from "./errors.js";

type FetchHandler = (request: Request) => Promise<Response>;

/** The peer address of each request `toNodeListener` made (a Request carries none of its own). */
const peers = new WeakMap<Request, string>();

/** The address of the client that sent the request, when `toNodeListener` made it; undefined otherwise. */
export function remoteAddressOf(request: Request): string | undefined {
  return peers.get(request);
}

/** A request made from another (a route that forwards) keeps the other's peer. */
export function withPeerOf(from: Request, made: Request): Request {
  const peer = peers.get(from);
  if (peer !== undefined) peers.set(made, peer);
  return made;
}

/**
 * Serve a fetch-style handler from Node's http server: `http.createServer(toNodeListener(handler))`.
 * One AbortController per request, aborted when the connection closes (a browser that goes away
 * ends its stream) and dropped with the request.
 */
export function toNodeListener(handler: FetchHandler): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const controller = new AbortController();
    res.once("close", () => controller.abort());
    const headers = new Headers();
    for (const [key, value] of Object.entries(req.headers)) {
      if (Array.isArray(value)) for (const each of value) headers.append(key, each);
      else if (value !== undefined) headers.set(key, value);
    }
    const method = req.method ?? "GET";
    const hasBody = method !== "GET" && method !== "HEAD";
    const request = new Request(new URL(req.url ?? "/", `http://${req.headers.host ?? "localhost"}`), {
      method,
      headers,
      signal: controller.signal,
      ...(hasBody ? { body: Readable.toWeb(req) as ReadableStream<Uint8Array>, duplex: "half" } : {}),
    } as RequestInit);
    if (req.socket.remoteAddress !== undefined) peers.set(request, req.socket.remoteAddress);
    handler(request)
      .then((response) => send(response, res, method))
      .catch((error: unknown) => {
        if (!res.headersSent) {
          // A handler that rejects (agentHandler never does: it answers its own faults). Its text may
          // name a database, so it goes to the log under an id, and the client gets only the id.
          const failure = loggedFailure("internal_error", "the server failed to handle this request", error, (logged) => console.error(`jianmu/http: ${logged.message}`));
          res.writeHead(failure.status, { "content-type": "application/json; charset=utf-8" });
          res.end(JSON.stringify(errorBody(failure)));
        } else res.destroy();
      });
  };
}

async function send(response: Response, res: ServerResponse, method: string): Promise<void> {
  const headers: Record<string, string | string[]> = {};
  response.headers.forEach((value, key) => {
    headers[key] = value;
  });
  res.writeHead(response.status, headers);
  if (!response.body || method === "HEAD") {
    await response.body?.cancel();
    res.end();
    return;
  }
  res.flushHeaders();
  const reader = response.body.getReader();
  const closed = new Promise<void>((resolve) => res.once("close", resolve));
  res.once("close", () => void reader.cancel().catch(() => undefined));
  for (;;) {
    const { done, value } = await reader.read();
    if (done || res.destroyed) break;
    // Respect backpressure, but never wait on a connection that has gone.
    if (!res.write(value)) await Promise.race([new Promise<void>((resolve) => res.once("drain", resolve)), closed]);
  }
  if (!res.destroyed) res.end();
}
