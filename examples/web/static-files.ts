import { createReadStream, existsSync, statSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { extname, join, normalize, sep } from "node:path";

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".json": "application/json",
  ".map": "application/json",
};

/** Serve the built page from `dir`; any other path gets index.html (the page reads ?run= itself). */
export function serveStatic(dir: string): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? "/", "http://page").pathname);
    const wanted = normalize(join(dir, path));
    const inside = wanted.startsWith(dir + sep) && existsSync(wanted) && statSync(wanted).isFile();
    const file = inside ? wanted : join(dir, "index.html");
    res.writeHead(200, { "content-type": TYPES[extname(file)] ?? "application/octet-stream", "cache-control": "no-store" });
    createReadStream(file).pipe(res);
  };
}
