import { spawn, type ChildProcess } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { main as minimalExample } from "../../examples/minimal.js";
import { CLI, cleanEnv, runCli } from "./cli-harness.js";
import { human } from "../../actors/messages.js";
import { resolveModelClient } from "../../actors/openai/openai-model-client.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { runAgent } from "../../machines/runner.js";
import { calculatorTool } from "../../tools/builtin/calculator.js";

// Several real processes per test, on a machine the whole suite shares.
vi.setConfig({ testTimeout: 90_000, hookTimeout: 90_000 });

/** `jianmu serve`, then the CLI and an example on the live path against it, as a user would. */
describe("jianmu serve", () => {
  let server: ChildProcess;
  let baseURL: string;
  let serverErr = "";
  const exited = () => new Promise<number | null>((resolve) => server.on("close", resolve));

  beforeAll(async () => {
    server = spawn(process.execPath, [CLI, "serve", "--port", "0"], { env: cleanEnv() });
    server.stderr!.on("data", (chunk: Buffer) => (serverErr += chunk.toString()));
    baseURL = await new Promise<string>((resolve, reject) => {
      let out = "";
      server.stdout!.on("data", (chunk: Buffer) => {
        out += chunk.toString();
        const match = /^export OPENAI_BASE_URL=(http:\/\/127\.0\.0\.1:\d+\/v1)\n$/.exec(out);
        if (match) resolve(match[1]!);
      });
      server.on("close", (code) => reject(new Error(`serve exited ${code}: ${serverErr}`)));
    });
  });
  afterAll(() => {
    if (server.exitCode === null) server.kill("SIGKILL");
  });

  it("prints only the export line on stdout, and what it answers on stderr", () => {
    expect(serverErr).toContain("Tell me: the capital of the country; the weather there; the product name");
    expect(serverErr).toContain("What is 25 * 4 + 10?");
  });

  it("jianmu run reaches the recorded demo answer through the live path", async () => {
    const result = await runCli(["run"], { env: cleanEnv({ OPENAI_BASE_URL: baseURL }) });
    expect(result.code).toBe(0);
    expect(result.stderr).toContain(`model gpt-4o-mini at ${baseURL}`);
    expect(result.stderr).not.toContain("offline demo");
    expect(result.stdout).toMatch(/^Capital: The capital of Mexico is Mexico City\.\nWeather: .*sunny/);
  });

  it("answers the README's calculator question with scripted turns", async () => {
    const result = await runCli(["run", "What is 25 * 4 + 10?"], { env: cleanEnv({ OPENAI_BASE_URL: baseURL }) });
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/✓ calculator → \{"expression":"25 \* 4 \+ 10","result":110\}/);
    expect(result.stdout).toBe("25 * 4 + 10 = 110.\n");
  });

  it("an example runs live against it", async () => {
    const lines: string[] = [];
    const output = await minimalExample({ env: { OPENAI_BASE_URL: baseURL }, log: (line) => lines.push(line) });
    expect(lines[0]).toBe(`live: OpenAI-compatible endpoint ${baseURL}, model gpt-4o-mini`);
    expect(output.finalAnswer).toBe("25 * 4 + 10 = 110.");
  });

  it("answers a client that does not stream with whole completions, for scripted and recorded turns alike", async () => {
    const modelClient = resolveModelClient({ baseURL, apiKey: "not-needed", model: "gpt-4o-mini", stream: false, resilience: { maxRetries: 0 } });
    const calculator = await runAgent(createReactMachine({ modelClient, tools: [calculatorTool], configFile: false }), { messages: [human("What is 25 * 4 + 10?")] });
    expect(calculator).toMatchObject({ status: "succeeded", finalAnswer: "25 * 4 + 10 = 110.", rounds: 2 });
    // The recorded demo's model turns were streams, folded here into one answer each, with their usage.
    const raw = await fetch(`${baseURL}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "What is the capital of the UK? Use the tool, then answer." }] }),
    });
    expect(raw.headers.get("content-type")).toContain("application/json");
    const completion = (await raw.json()) as { object: string; choices: { message: { tool_calls?: { function: { name: string; arguments: string } }[] }; finish_reason: string }[]; usage?: { total_tokens: number } };
    expect(completion.object).toBe("chat.completion");
    expect(completion.choices[0]!.finish_reason).toBe("tool_calls");
    expect(() => JSON.parse(completion.choices[0]!.message.tool_calls![0]!.function.arguments)).not.toThrow();
    expect(completion.usage?.total_tokens).toBeGreaterThan(0);
  });

  it("a task it has no turns for fails the run with the list of tasks it knows", async () => {
    const result = await runCli(["run", "Write me a poem"], { env: cleanEnv({ OPENAI_BASE_URL: baseURL }) });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/Agent failed \(modelError\): .*jianmu serve replays only these tasks: .*What is 25 \* 4 \+ 10\?/);
  });

  it("stops on Ctrl-C (SIGINT) and exits 0", async () => {
    const done = exited();
    server.kill("SIGINT");
    expect(await done).toBe(0);
    expect(serverErr).toContain("jianmu serve: stopped");
  });
});
