import pg from "pg";
import type { ResolvedOptions } from "./options.js";

export function clientConfig(options: ResolvedOptions): pg.ClientConfig {
  return { connectionString: options.connectionString, connectionTimeoutMillis: options.connectTimeoutMs, application_name: "jianmu" };
}

/** How long a pool stays at the size it had when the server last refused it a connection. */
const HOLD_MS = 30_000;

/**
 * The store's own pool (up to `maxConnections`), made to share a server that is short of
 * connections. pg's pool opens a new connection for a statement whenever none is idle and it is not
 * full, and a refused one fails the statement; after the server refuses one ("too many clients"),
 * the pool stops growing for a while (statements queue on the connections it has), so a few busy
 * processes cannot keep every other one out. Connections are also recycled after a minute, so
 * one that grew during a burst gives its connections back to the server in turn.
 */
export function ownPool(options: ResolvedOptions): { pool: pg.Pool; refused(): void } {
  const pool = new pg.Pool({ ...clientConfig(options), max: options.maxConnections, idleTimeoutMillis: 10_000, maxLifetimeSeconds: 60 });
  // An idle connection cut by a server restart must not crash the process; the next query reconnects.
  pool.on("error", () => undefined);
  // pg-pool reads its size limit from `options.max` on every checkout (`_isFull`).
  const limits = (pool as unknown as { options: { max: number } }).options;
  let hold: NodeJS.Timeout | undefined;
  return {
    pool,
    refused() {
      limits.max = Math.max(1, Math.min(limits.max, pool.totalCount));
      clearTimeout(hold);
      hold = setTimeout(() => (limits.max = options.maxConnections), HOLD_MS);
      hold.unref();
    },
  };
}
