/**
 * A tiny round-robin proxy for the multi-process example (cluster.mjs): each request goes to the
 * next replica; a replica that cannot be reached (killed) is skipped and the request tried on the
 * next. Responses stream through as they come (server-sent events included), and `x-served-by`
 * names the replica that answered. A stand-in for a real load balancer in a few lines, not one.
 */
import { createServer, request as forward, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export async function startProxy(upstreams: readonly string[], port = 0): Promise<{ url: string; close: () => Promise<void> }> {
  let next = 0;
  const send = (req: IncomingMessage, res: ServerResponse, body: Buffer, tries: number) => {
    const target = new URL(req.url ?? "/", upstreams[next++ % upstreams.length]);
    const out = forward(target, { method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, { ...answer.headers, "x-served-by": target.host });
      answer.pipe(res);
      // A replica that dies mid-response cuts the page's stream: the page reconnects, as it would to any dead server.
      answer.once("error", () => res.destroy());
    });
    // A page that goes away lets go of the replica's stream too.
    res.once("close", () => out.destroy());
    out.once("error", () => {
      if (res.headersSent) return void res.destroy();
      if (tries + 1 >= upstreams.length) return void res.writeHead(502).end();
      send(req, res, body, tries + 1);
    });
    out.end(body);
  };
  const server = createServer((req, res) => {
    // Bodies are small JSON here: read whole, so a retry on the next replica can send it again.
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => send(req, res, Buffer.concat(chunks), 0));
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
