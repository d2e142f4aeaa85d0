/** The handler's routes, matched on the path below `basePath`. */
export type Route =
  | { name: "startRun" }
  | { name: "runStatus"; runId: string }
  | { name: "runStream"; runId: string }
  | { name: "runEvents"; runId: string }
  | { name: "thread"; threadId: string }
  | { name: "agentChart"; agent: string }
  | { name: "aiSdkChat"; agent: string }
  | { name: "agUi"; agent: string };

const PATTERNS: { pattern: RegExp; method: string; make: (match: string[]) => Route }[] = [
  { pattern: /^\/runs\/?$/, method: "POST", make: () => ({ name: "startRun" }) },
  { pattern: /^\/runs\/([^/]+)\/?$/, method: "GET", make: (m) => ({ name: "runStatus", runId: m[1]! }) },
  { pattern: /^\/runs\/([^/]+)\/stream\/?$/, method: "GET", make: (m) => ({ name: "runStream", runId: m[1]! }) },
  { pattern: /^\/runs\/([^/]+)\/events\/?$/, method: "POST", make: (m) => ({ name: "runEvents", runId: m[1]! }) },
  { pattern: /^\/threads\/([^/]+)\/?$/, method: "GET", make: (m) => ({ name: "thread", threadId: m[1]! }) },
  { pattern: /^\/agents\/([^/]+)\/chart\/?$/, method: "GET", make: (m) => ({ name: "agentChart", agent: m[1]! }) },
  { pattern: /^\/agents\/([^/]+)\/chat\/?$/, method: "POST", make: (m) => ({ name: "aiSdkChat", agent: m[1]! }) },
  { pattern: /^\/agents\/([^/]+)\/ag-ui\/?$/, method: "POST", make: (m) => ({ name: "agUi", agent: m[1]! }) },
];

export type Matched = { route: Route } | { allow: string } | undefined;

/** The route for a method and path; `allow` when the path exists with other methods; undefined when it does not. */
export function matchRoute(method: string, path: string): Matched {
  const allowed: string[] = [];
  for (const { pattern, method: wanted, make } of PATTERNS) {
    const match = pattern.exec(path);
    if (!match) continue;
    const parts = match.map((part) => safeDecode(part));
    if (method === wanted || (method === "HEAD" && wanted === "GET")) return { route: make(parts) };
    allowed.push(wanted);
  }
  return allowed.length > 0 ? { allow: allowed.join(", ") } : undefined;
}

function safeDecode(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}
