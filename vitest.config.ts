import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts", "examples/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: "forks",
    // A PostgreSQL server for the Postgres tests: DATABASE_URL, or a throwaway cluster (test/postgres/global-setup.ts).
    globalSetup: ["test/postgres/global-setup.ts"],
  },
});
