import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { OpenAIServer } from "../../testing/openai-server.js";
import { startScriptServer } from "../queue/script-model.js";
import { cleanEnv, runCli } from "./cli-harness.js";

/**
 * `jianmu eval <module>`, as a user runs it: the built CLI in its own process, the module's agent on
 * the live path (OPENAI_BASE_URL at a loopback server answering each case from its script).
 */
describe("jianmu eval", () => {
  let server: OpenAIServer;
  beforeAll(async () => {
    server = await startScriptServer();
  });
  afterAll(async () => {
    await server?.close();
  });
  const env = (extra: Record<string, string> = {}) => cleanEnv({ OPENAI_BASE_URL: server.baseURL, OPENAI_API_KEY: "test-key", ...extra });

  it("prints a line per case and the totals, and exits 0 when every case passed", async () => {
    const result = await runCli(["eval", "test/cli/eval-cases.mjs", "--concurrency", "2"], { env: env() });
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^✓ records, then answers \(\d+ ms, 2 rounds, 30 tokens\)$/m);
    expect(result.stdout).toMatch(/^✓ answers at once \(\d+ ms, 1 round, 15 tokens\)$/m);
    expect(result.stdout.trimEnd().split("\n").at(-1)).toBe("2 of 2 cases passed");
    // The live path: the runs' requests reached the endpoint the environment named.
    expect(server.requests.length).toBeGreaterThanOrEqual(3);
  });

  it("says what failed and exits 1; --json gives the report as JSON", async () => {
    const text = await runCli(["eval", "test/cli/eval-cases.mjs"], { env: env({ EVAL_FAIL: "1" }) });
    expect(text.code).toBe(1);
    expect(text.stdout).toContain("✗ wants a tool it never calls");
    expect(text.stdout).toContain("    the tool calls [] do not hold [record] in that order");
    expect(text.stdout.trimEnd().split("\n").at(-1)).toBe("2 of 3 cases passed");

    const json = await runCli(["eval", "test/cli/eval-cases.mjs", "--json"], { env: env({ EVAL_FAIL: "1" }) });
    expect(json.code).toBe(1);
    const report = JSON.parse(json.stdout) as { passed: number; failed: number; cases: { name: string; pass: boolean; failures: string[]; trajectory: { toolCalls: { name: string }[]; states: string[] } }[] };
    expect(report).toMatchObject({ passed: 2, failed: 1 });
    expect(report.cases[0]!.trajectory.toolCalls.map((c) => c.name)).toEqual(["record"]);
    expect(report.cases[0]!.trajectory.states.at(-1)).toBe("Succeeded");
    expect(report.cases[2]).toMatchObject({ name: "wants a tool it never calls", pass: false, failures: ["the tool calls [] do not hold [record] in that order"] });
  });

  it("refuses a module it cannot use, with exit code 2 and the fix", async () => {
    const missing = await runCli(["eval", "test/cli/no-such-cases.mjs"], { env: env() });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/^jianmu: cannot load test\/cli\/no-such-cases\.mjs: /);
    const noAgent = await runCli(["eval", "test/queue/fixture-agents.mjs"], { env: env() });
    expect(noAgent.code).toBe(2);
    expect(noAgent.stderr).toContain("test/queue/fixture-agents.mjs exports no agent: export const agent = createReactMachine({ ... })");
    const noArgs = await runCli(["eval"], { env: env() });
    expect(noArgs.code).toBe(2);
    expect(noArgs.stderr).toContain("eval takes one module (exporting agent and cases), got 0");
    const badConcurrency = await runCli(["eval", "test/cli/eval-cases.mjs", "--concurrency", "0"], { env: env() });
    expect(badConcurrency.code).toBe(2);
    expect(badConcurrency.stderr).toContain("--concurrency must be a whole number of at least 1");
  });
});
