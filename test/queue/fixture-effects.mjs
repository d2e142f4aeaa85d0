// The side effect the queue's fixture agents count (their `record` and `pay` tools), opened where a
// process of the tests or the benches keeps it. Plain JavaScript: worker-child.mjs and the bench's
// children load it under bare `node`.
import pg from "pg";

/**
 * Every execution of a tool adds one to its note's row in the database: `sqlite` (that file, which
 * may be the store's own) or else PostgreSQL at `url`. With `effectsFile` each effect is one line
 * appended to that file instead, and no database connection is opened (the tests that starve the
 * server of connections count effects there).
 * @param {{ url?: string, sqlite?: string, effectsFile?: string }} args
 * @returns {Promise<{ effect(note: string): Promise<void> | void, end(): Promise<void> }>}
 */
export async function openEffects(args) {
  if (args.effectsFile) {
    const { appendFileSync } = await import("node:fs");
    return { effect: (note) => appendFileSync(args.effectsFile, `${note}\n`), end: async () => undefined };
  }
  if (args.sqlite) {
    const Database = (await import("better-sqlite3")).default;
    const db = new Database(args.sqlite, { timeout: 5_000 });
    db.exec("CREATE TABLE IF NOT EXISTS effects (note TEXT PRIMARY KEY, count INTEGER NOT NULL)");
    const add = db.prepare("INSERT INTO effects (note, count) VALUES (?, 1) ON CONFLICT (note) DO UPDATE SET count = count + 1");
    return { effect: (note) => void add.run(note), end: async () => db.close() };
  }
  const pool = new pg.Pool({ connectionString: args.url, max: 2 });
  pool.on("error", () => undefined);
  return {
    effect: async (note) => {
      await pool.query("INSERT INTO effects (note, count) VALUES ($1, 1) ON CONFLICT (note) DO UPDATE SET count = effects.count + 1", [note]);
    },
    end: () => pool.end(),
  };
}
