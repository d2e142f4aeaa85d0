import { defineConfig } from "vitest/config";

/**
 * `npm run test:fast`: the core loop, the guards and the type tests (`expectTypeOf`), in seconds.
 * None of them needs PostgreSQL, so there is no globalSetup starting a throwaway cluster; the full
 * suite (`npm test`, vitest.config.ts) stays the CI gate.
 */
export default defineConfig({
  test: {
    include: ["test/architecture/**/*.test.ts", "test/core/**/*.test.ts", "test/guards/**/*.test.ts", "test/types/**/*.test.ts", "test/output/structured-output.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: "forks",
  },
});
