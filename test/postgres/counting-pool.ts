import pg from "pg";

/** A real pg.Pool that counts the statements the store sends through it. */
export function countingPool(connectionString: string): { pool: pg.Pool; statements: () => number } {
  const pool = new pg.Pool({ connectionString, max: 4 });
  let statements = 0;
  const query = pool.query.bind(pool) as (...args: unknown[]) => unknown;
  pool.query = ((...args: unknown[]) => {
    statements += 1;
    return query(...args);
  }) as typeof pool.query;
  return { pool, statements: () => statements };
}
