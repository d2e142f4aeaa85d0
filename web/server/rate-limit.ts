import type { ErrorBody } from "../protocol.js";
import { jsonResponse } from "./errors.js";
import { remoteAddressOf } from "./node-adapter.js";

/** `agentHandler({ rateLimit })`: at most `max` requests per client in each window of `windowMs`. */
export interface RateLimitOptions {
  windowMs: number;
  max: number;
  /**
   * Which client a request comes from (a user id from a session cookie, an API key's id...).
   * Default: the peer's address as `toNodeListener` saw it (a proxy's `X-Forwarded-For` is not
   * trusted: behind a proxy, give a key that reads it); requests from elsewhere share one budget.
   */
  key?: (request: Request) => string | Promise<string>;
  /** At most this many clients are counted at once (default 100,000); past it the oldest windows are forgotten. */
  maxClients?: number;
}

interface Window {
  resetAt: number;
  count: number;
}

/** A fixed-window counter per client: bounded in memory, answering 429 with `Retry-After` when a client is over. */
export class RateLimiter {
  private readonly windows = new Map<string, Window>();
  private readonly maxClients: number;

  constructor(private readonly options: RateLimitOptions) {
    checkOptions(options);
    this.maxClients = options.maxClients ?? 100_000;
  }

  /** Count the request; a 429 response when its client is over the limit, undefined when it may go on. */
  async check(request: Request): Promise<Response | undefined> {
    const key = this.options.key ? await this.options.key(request) : (remoteAddressOf(request) ?? "(unknown peer)");
    const now = Date.now();
    let window = this.windows.get(key);
    if (!window || now >= window.resetAt) {
      this.windows.delete(key);
      window = { resetAt: now + this.options.windowMs, count: 0 };
      this.windows.set(key, window);
      this.forgetOldest(now);
    }
    window.count++;
    if (window.count <= this.options.max) return undefined;
    const retryAfterS = Math.max(1, Math.ceil((window.resetAt - now) / 1000));
    const body: ErrorBody = { error: { code: "rate_limited", message: `too many requests: at most ${this.options.max} every ${this.options.windowMs} ms; retry after ${retryAfterS} s` } };
    return jsonResponse(body, 429, { "retry-after": String(retryAfterS) });
  }

  /** Windows are kept in the order they opened: drop ended ones from the front, then the oldest past `maxClients`. */
  private forgetOldest(now: number): void {
    for (const [key, window] of this.windows) {
      if (now < window.resetAt && this.windows.size <= this.maxClients) break;
      this.windows.delete(key);
    }
  }
}

function checkOptions(options: RateLimitOptions): void {
  const positive = (value: unknown) => typeof value === "number" && Number.isInteger(value) && value > 0;
  if (!positive(options.windowMs)) throw new TypeError(`agentHandler: options.rateLimit.windowMs must be a positive integer (milliseconds), e.g. { windowMs: 60_000, max: 120 }`);
  if (!positive(options.max)) throw new TypeError(`agentHandler: options.rateLimit.max must be a positive integer (requests per window), e.g. { windowMs: 60_000, max: 120 }`);
  if (options.key !== undefined && typeof options.key !== "function") throw new TypeError("agentHandler: options.rateLimit.key must be a function (request) => string naming the client");
  if (options.maxClients !== undefined && !positive(options.maxClients)) throw new TypeError("agentHandler: options.rateLimit.maxClients must be a positive integer");
}
