import { afterAll, beforeAll } from "vitest";
import { PostgresRunStore } from "../../queue/postgres/store.js";
import { describeRunLogConformance } from "../persistence/log-conformance.js";
import { describeRunStoreConformance } from "../queue/conformance.js";
import { freshDatabase } from "./database.js";

let db: Awaited<ReturnType<typeof freshDatabase>>;
let schemas = 0;
beforeAll(async () => {
  db = await freshDatabase();
});
afterAll(async () => {
  await db?.drop();
});

describeRunStoreConformance("PostgreSQL", (options = {}) => PostgresRunStore.connect({ connectionString: db.url, schema: `conformance_${++schemas}`, pollMs: 100, ...options }));
describeRunLogConformance("PostgresRunStore", (options) => PostgresRunStore.connect({ connectionString: db.url, schema: `log_${++schemas}`, pollMs: 100, ...options }));
