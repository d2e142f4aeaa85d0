import { availableParallelism } from "node:os";
import { configDefaults, defineConfig } from "vitest/config";

const shared = { testTimeout: 30_000, hookTimeout: 30_000, pool: "forks" } as const;

/**
 * Two projects. "jianmu": the suite, on the devDependency `ai` (AI SDK 6). "ai-sdk-7": AI SDK 7
 * (the `ai-v7` devDependency, npm's alias of ai@7), which jianmu's own `import ... from "ai"`
 * resolves to there, as in an app that installed ai@7: its own tests (v4 models) and the AI SDK 6
 * suite's v2 and v3 model tests again, so one source is proven on both majors the peer range allows.
 */
export default defineConfig({
  test: {
    // Vitest's default is one worker per core but one, so a 2-core machine runs one file at a time.
    // Most of the suite waits (on child processes, PostgreSQL, Chromium, sockets), so two files at a
    // time take about two thirds of the wall time; every test is written to hold on a loaded machine.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    projects: [
      {
        test: {
          name: "jianmu",
          include: ["test/**/*.test.ts", "examples/**/*.test.ts"],
          exclude: [...configDefaults.exclude, "test/ai-sdk-7/**"],
          ...shared,
          // A PostgreSQL server for the Postgres tests: DATABASE_URL, or a throwaway cluster (test/postgres/global-setup.ts).
          globalSetup: ["test/postgres/global-setup.ts"],
        },
      },
      {
        resolve: { alias: [{ find: /^ai(\/.*)?$/, replacement: "ai-v7$1" }] },
        test: {
          name: "ai-sdk-7",
          include: [
            "test/ai-sdk-7/**/*.test.ts",
            "test/ai-sdk/mock-model.test.ts",
            "test/ai-sdk/whole-answer.test.ts",
            "test/ai-sdk/openai-http.test.ts",
            "test/ai-sdk/anthropic-http.test.ts",
            // The chat route's UI message stream, read by AI SDK 7's own DefaultChatTransport and readUIMessageStream.
            "test/web/ui-message-chunks.test.ts",
            "test/web/ai-sdk-chat.test.ts",
            "test/web/chat-replicas.test.ts",
          ],
          ...shared,
        },
      },
    ],
  },
});
