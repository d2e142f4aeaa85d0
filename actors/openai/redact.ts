/**
 * Builds a function that removes secrets from text before it goes into an error or event.
 * Servers sometimes echo part of a key ("Incorrect API key provided: sk-...") and connection
 * errors can quote a URL; neither may carry a key out of the client.
 */
export function secretRedactor(secrets: Iterable<string | undefined>): (text: string) => string {
  const known = [...new Set([...secrets].filter((s): s is string => typeof s === "string" && s.length >= 4))].sort(
    (a, b) => b.length - a.length,
  );
  return (text) => {
    let out = text;
    for (const secret of known) out = out.split(secret).join("[redacted]");
    return out.replace(/(Bearer\s+)[^\s"',;]+/gi, "$1[redacted]").replace(/\bsk-[A-Za-z0-9_*-]{8,}/g, "sk-[redacted]");
  };
}

/** A base URL as it may be shown: no user, password, query or fragment (any of them can hold a key). */
export function publicEndpoint(baseURL: string): string {
  try {
    const url = new URL(baseURL);
    url.username = "";
    url.password = "";
    url.search = "";
    url.hash = "";
    return url.toString().replace(/\/$/, "");
  } catch {
    return "(invalid base URL)";
  }
}

/** The parts of a base URL that may be credentials: user, password and query values. */
export function urlSecrets(baseURL: string): string[] {
  try {
    const url = new URL(baseURL);
    return [url.username, url.password, ...url.searchParams.values()].map(decodeURIComponent).filter((part) => part !== "");
  } catch {
    return [];
  }
}

/**
 * A copy of an error chain that is safe to keep as a `cause`: same names, messages and stacks
 * with secrets removed. The SDK's own errors repeat the server's message verbatim, so they
 * cannot be attached as they are.
 */
export function redactedError(error: unknown, redact: (text: string) => string, depth = 0): Error | undefined {
  if (error === undefined || error === null) return undefined;
  const source = error instanceof Error ? error : new Error(String(error));
  const copy = new Error(redact(source.message));
  copy.name = source.name;
  if (source.stack !== undefined) copy.stack = redact(source.stack);
  if (depth < 4 && source.cause !== undefined) {
    const cause = redactedError(source.cause, redact, depth + 1);
    if (cause) Object.defineProperty(copy, "cause", { value: cause, enumerable: false, writable: true, configurable: true });
  }
  return copy;
}
