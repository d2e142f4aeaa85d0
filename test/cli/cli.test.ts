import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { replies, startOpenAIServer, type OpenAIServer } from "../../testing/openai-server.js";
import { responsesTextTurn, responsesToolCallTurn } from "../../testing/responses-turns.js";
import { cleanEnv, ROOT, runCli, runCliInTerminal } from "./cli-harness.js";

const DEMO_TASK = "Tell me: the capital of the country; the weather there; the product name";

describe("the README's first command", () => {
  it("npm run demo reaches the final answer offline", async () => {
    // Run the script's command itself; its build step is what \`npm test\` already did (rebuilding
    // dist/ here would race the other CLI tests reading it).
    const script = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> }).scripts["demo"]!;
    const [build, command] = script.split(" && ");
    expect(build).toBe("npm run build --silent");
    const [node, cli, ...args] = command!.split(" ");
    expect([node, cli]).toEqual(["node", "dist/cli/main.js"]);
    const result = await runCli(args);
    expect(result.code).toBe(0);
    expect(result.stderr.split("\n")[0]).toMatch(/^offline demo: /);
    expect(result.stdout).toMatch(/^Capital: The capital of Mexico is Mexico City\./);
  });
});

describe("jianmu run, offline (no endpoint configured)", () => {
  it("announces the replay on the first line and reaches the recorded final answer", async () => {
    const result = await runCli(["run"]);
    expect(result.code).toBe(0);
    const lines = result.stderr.split("\n");
    expect(lines[0]).toMatch(/^offline demo: no model endpoint configured, so real recorded gpt-4o turns are replayed from http:\/\/127\.0\.0\.1:\d+\/v1/);
    expect(result.stderr).toContain("→ get_country {}");
    expect(result.stderr).toMatch(/✓ get_weather → sunny \(\d+ ms\)/);
    // Only the answer on stdout.
    expect(result.stdout).toBe("Capital: The capital of Mexico is Mexico City.\nWeather: The weather in Mexico City is currently sunny.\nProduct Name: The product name is Pydantic AI.\n");
    expect(result.stderr).toContain(`task: ${DEMO_TASK}`);
    expect(result.stderr).toMatch(/succeeded: 3 model replies, 1352 tokens/);
  });

  it("replays the second recorded task too", async () => {
    const result = await runCli(["run", "What is the capital of the UK? Use the tool, then answer."]);
    expect(result.code).toBe(0);
    expect(result.stderr).toContain('✓ get_capital → London');
    // Streamed text is not a terminal here: the answer is printed once, at the end.
    expect(result.stdout).toBe("The capital of the UK is London.\n");
  });

  it("refuses a task it has no recording for, saying how to configure a model (exit 2)", async () => {
    const result = await runCli(["run", "Write me a poem"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/no model endpoint is configured \(set OPENAI_BASE_URL or OPENAI_API_KEY/);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(result.stderr).toContain(`jianmu run "${DEMO_TASK}"`);
  });

  it("says which flags the replay cannot honour", async () => {
    const result = await runCli(["run", "--tools", "calculator", "--model", "gpt-5"]);
    expect(result.code).toBe(0);
    expect(result.stderr).toContain("offline replay uses the recorded model and tools; ignoring --tools, --model");
  });

  it("exits 1 with the termination reason when the agent fails", async () => {
    const result = await runCli(["run", "--max-iterations", "1"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/Agent failed \(maxIterations\)/);
  });

  it("--json prints one JSON object per line, ending with the output", async () => {
    const result = await runCli(["run", "--json"]);
    expect(result.code).toBe(0);
    const records = result.stdout.trim().split("\n").map((line) => JSON.parse(line) as { type: string; output?: { status: string; rounds: number } });
    expect(records[0]!.type).toBe("cli.message");
    expect(records.some((r) => r.type === "tool.call.completed")).toBe(true);
    expect(records.some((r) => r.type === "state")).toBe(true);
    expect(records.at(-1)).toMatchObject({ type: "output", output: { status: "succeeded", rounds: 3 } });
  });

  it("asks for approval without a terminal: refuses clearly, and the model reads the rejection", async () => {
    const result = await runCli(["run", "--require-approval", "get_weather"]);
    expect(result.stderr).toMatch(/\? get_weather \{"city":"Mexico City"\} needs approval/);
    expect(result.stderr).toContain("approval is required but there is no terminal to ask on (stdin is not a TTY)");
    expect(result.stderr).toMatch(/⊘ get_weather rejected/);
    expect(result.stderr).not.toContain("✓ get_weather");
  });

  it("--yes approves without asking", async () => {
    const result = await runCli(["run", "--require-approval", "get_weather", "--yes"]);
    expect(result.code).toBe(0);
    expect(result.stderr).toContain("approved (--yes)");
    expect(result.stderr).toContain("✓ get_weather → sunny");
  });
});

describe("interactive approval under a pseudo-terminal", () => {
  it("approve", async () => {
    const result = await runCliInTerminal(["run", "--require-approval", "get_weather"], ["y"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("approve get_weather? [y]es / [n]o / [e]dit arguments:");
    expect(result.stdout).toContain("✓ get_weather → sunny");
  });

  it("reject with a reason", async () => {
    const result = await runCliInTerminal(["run", "--require-approval", "get_weather"], ["n", "not today"]);
    expect(result.stdout).toContain("⊘ get_weather rejected: not today");
    expect(result.stdout).not.toContain("✓ get_weather");
  });

  it("edit: an invalid edit is refused and asked again, a valid one is what the tool gets", async () => {
    const result = await runCliInTerminal(["run", "--require-approval", "get_weather"], ["e", '{"town":"Paris"}', "e", '{"city":"Paris"}']);
    expect(result.stdout).toMatch(/edit refused: the edited arguments do not fit get_weather: city: /);
    expect(result.stdout).toContain("✓ get_weather → sunny");
    expect(result.code).toBe(0);
  });
});

describe("jianmu run against a configured endpoint", () => {
  let server: OpenAIServer;
  beforeAll(async () => {
    const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
      id: "c",
      object: "chat.completion.chunk",
      created: 1,
      model: "local-model",
      choices: [{ index: 0, delta, finish_reason: finish }],
    });
    const usage = (prompt: number, completion: number) => ({ id: "c", object: "chat.completion.chunk", created: 1, model: "local-model", choices: [], usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion } });
    const turns = [
      replies.sseFromChunks([
        chunk({ role: "assistant", content: null, tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "calculator", arguments: "" } }] }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: '{"expression":"25 * 4 + 10"}' } }] }),
        chunk({}, "tool_calls"),
        usage(100, 20),
      ]),
      replies.sseFromChunks([chunk({ role: "assistant", content: "25 * 4 + 10 " }), chunk({ content: "= 110" }), chunk({}, "stop"), usage(150, 8)]),
    ];
    server = await startOpenAIServer({ respond: (request) => turns[request.index] ?? replies.error(500, "script exhausted") });
  });
  afterAll(() => server.close());

  it("uses the endpoint from OPENAI_BASE_URL with the built-in tools, and streams the answer", async () => {
    const result = await runCli(["run", "What is 25 * 4 + 10?", "--model", "local-model"], { env: cleanEnv({ OPENAI_BASE_URL: server.baseURL }) });
    expect(result.code).toBe(0);
    expect(result.stderr).not.toContain("offline demo");
    expect(result.stderr).toContain('→ calculator {"expression":"25 * 4 + 10"}');
    expect(result.stderr).toMatch(/✓ calculator → \{"expression":"25 \* 4 \+ 10","result":110\}/);
    // Streamed, but stdout is not a terminal: the answer once, alone.
    expect(result.stdout).toBe("25 * 4 + 10 = 110\n");
    const first = server.requests[0]!.body as { model: string; tools: { function: { name: string } }[]; stream: boolean };
    expect(first.model).toBe("local-model");
    expect(first.stream).toBe(true);
    expect(first.tools.map((t) => t.function.name)).toEqual(["calculator", "current_time"]);
  });
});

describe("jianmu run with the endpoint in jianmu.yaml", () => {
  let server: OpenAIServer;
  beforeAll(async () => {
    const answer = {
      id: "c",
      object: "chat.completion",
      created: 1,
      model: "yaml-model",
      choices: [{ index: 0, message: { role: "assistant", content: "Hello from the file's endpoint." }, finish_reason: "stop" }],
      usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
    };
    server = await startOpenAIServer({ respond: () => replies.json(answer) });
  });
  afterAll(() => server.close());

  it("llm.base_url, llm.api_key_env, llm.stream and models.react are what the run uses", async () => {
    const dir = mkdtempSync(join(tmpdir(), "jianmu-cli-endpoint-"));
    writeFileSync(join(dir, "jianmu.yaml"), `models:\n  react: yaml-model\nllm:\n  base_url: ${server.baseURL}\n  api_key_env: MY_ENDPOINT_KEY\n  stream: false\n`);
    const result = await runCli(["run", "Say hello"], { cwd: dir, env: cleanEnv({ MY_ENDPOINT_KEY: "key-from-the-named-variable" }) });
    expect(result.code).toBe(0);
    expect(result.stdout).toBe("Hello from the file's endpoint.\n");
    expect(result.stderr).toContain(`model yaml-model at ${server.baseURL}`);
    const request = server.requests.at(-1)!;
    expect((request.body as { model: string }).model).toBe("yaml-model");
    expect((request.body as { stream?: boolean }).stream).toBeFalsy();
    expect(request.headers.authorization).toBe("Bearer key-from-the-named-variable");
  });
});

describe("jianmu run --record, then jianmu view", () => {
  it("records the run and writes a self-contained HTML viewer of it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "jianmu-view-"));
    const recorded = await runCli(["run", "--record", "run.jsonl"], { cwd: dir });
    expect(recorded.code).toBe(0);
    expect(recorded.stderr).toMatch(/recorded \d+ lines to .*run\.jsonl; view it with: jianmu view run\.jsonl/);
    const lines = readFileSync(join(dir, "run.jsonl"), "utf8").trim().split("\n").map((line) => JSON.parse(line) as { k: string });
    expect(lines[0]!.k).toBe("header");
    expect(lines.at(-1)!.k).toBe("end");
    const viewed = await runCli(["view", "run.jsonl"], { cwd: dir });
    expect(viewed.code).toBe(0);
    expect(viewed.stdout).toMatch(/wrote .*run\.html \(\d+ bytes, run succeeded\)/);
    const html = readFileSync(join(dir, "run.html"), "utf8");
    expect(html).toContain("<svg");
    expect(html).not.toMatch(/<script[^>]+src=|<link[^>]+href="http/);
  });

  it("a missing recording is a usage error", async () => {
    const result = await runCli(["view", "missing.jsonl"], { cwd: mkdtempSync(join(tmpdir(), "jianmu-view-")) });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/cannot read the recording: .*missing\.jsonl/);
  });
});

describe("bad input", () => {
  it("an unknown flag is a usage error (exit 2) pointing at help", async () => {
    const result = await runCli(["run", "--frobnicate"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe('jianmu: unknown option --frobnicate for "jianmu run": see jianmu run --help\n');
  });

  it("bad flag values are usage errors naming the flag", async () => {
    expect((await runCli(["run", "--max-iterations", "zero"])).stderr).toContain('--max-iterations must be a whole number of at least 1, got "zero"');
    expect((await runCli(["run", "--base-url", "not a url"])).code).toBe(2);
    expect((await runCli(["run", "--tools", "calculator,teleport"], { env: cleanEnv({ OPENAI_BASE_URL: "http://127.0.0.1:9/v1" }) })).stderr).toContain('--tools: unknown tool "teleport"');
    expect((await runCli(["launch"])).stderr).toContain('unknown command "launch"');
  });

  it("a bad jianmu.yaml is a configuration error naming field, value and file (exit 2)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "jianmu-cli-"));
    writeFileSync(join(dir, "jianmu.yaml"), "limits:\n  max_iterations: lots\n");
    const result = await runCli(["run"], { cwd: dir });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`${join(dir, "jianmu.yaml")}: limits.max_iterations = "lots" is invalid`);
  });

  it("a flag that sets a config field obeys the field's limits, named by the flag (exit 2)", async () => {
    const result = await runCli(["run", "--max-iterations", "20000"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^jianmu: --max-iterations 20000 is invalid: .*10000/);
  });

  it("a removed setting in jianmu.yaml names its replacement (exit 2)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "jianmu-cli-"));
    writeFileSync(join(dir, "jianmu.yaml"), "limits:\n  max_rounds: 10\n");
    const result = await runCli(["run"], { cwd: dir });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`jianmu: ${join(dir, "jianmu.yaml")}: limits.max_rounds was removed: use limits.max_iterations (`);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
  });

  it("help prints the usage and exits 0", async () => {
    const result = await runCli(["help"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("jianmu run");
    expect(result.stdout).toContain("Exit codes: 0 the agent succeeded, 1 the agent failed");
  });
});

describe("jianmu run over the Responses API (--api responses, or llm.api in jianmu.yaml)", () => {
  let server: OpenAIServer;
  beforeAll(async () => {
    const turns = [
      responsesToolCallTurn([{ id: "call_calc", name: "calculator", args: { expression: "25 * 4 + 10" } }], { promptTokens: 300, completionTokens: 40, reasoningTokens: 32 }, {
        reasoning: { summary: ["The user wants arithmetic.", "I will use the calculator."] },
      }),
      responsesTextTurn("25 * 4 + 10 = 110", { promptTokens: 360, completionTokens: 12, cachedPromptTokens: 256, reasoningTokens: 0 }),
    ];
    // Each run gets the two turns in order.
    server = await startOpenAIServer({ respond: (request) => turns[request.index % 2] ?? replies.error(500, "script exhausted") });
  });
  afterAll(() => server.close());

  it("streams the reasoning to stderr (a line per reply when it is no terminal), the answer alone to stdout, and the token details in the summary", async () => {
    const result = await runCli(["run", "What is 25 * 4 + 10?", "--api", "responses", "--model", "gpt-5-mini"], { env: cleanEnv({ OPENAI_BASE_URL: server.baseURL }) });
    expect(result.code).toBe(0);
    expect(result.stdout).toBe("25 * 4 + 10 = 110\n");
    expect(result.stderr).toContain("model gpt-5-mini at " + server.baseURL + " (Responses API)");
    expect(result.stderr).toContain("  reasoning: The user wants arithmetic. I will use the calculator.\n");
    expect(result.stderr).toMatch(/── succeeded: 2 model replies, 712 tokens \(prompt 660 \(256 cached\), completion 52 \(32 reasoning\)\)/);
    const paths = server.requests.slice(-2).map((request) => request.path);
    expect(paths).toEqual(["/v1/responses", "/v1/responses"]);
  });

  it("on a terminal the reasoning streams as it comes (dimmed, with colour), before the tool call", async () => {
    const result = await runCliInTerminal(["run", "What is 25 * 4 + 10?", "--api", "responses"], [], { env: { OPENAI_BASE_URL: server.baseURL, NO_COLOR: "1" } });
    expect(result.stdout).toMatch(/thinking: The user wants arithmetic\.\r?\n\r?\nI will use the calculator\.\r?\n[\s\S]*→ calculator/);
    expect(result.stdout).toContain("25 * 4 + 10 = 110");
  });

  it("llm.api and llm.reasoning in jianmu.yaml: the Responses API, asked for the reasoning's encrypted content", async () => {
    const dir = mkdtempSync(join(tmpdir(), "jianmu-cli-responses-"));
    writeFileSync(join(dir, "jianmu.yaml"), `models:\n  react: gpt-5-mini\nllm:\n  base_url: ${server.baseURL}\n  api: responses\n  reasoning: { effort: low, summary: auto }\n`);
    const before = server.requests.length;
    const result = await runCli(["run", "What is 25 * 4 + 10?"], { cwd: dir, env: cleanEnv() });
    expect(result.code).toBe(0);
    const bodies = server.requests.slice(before).map((request) => request.body as Record<string, unknown>);
    expect(bodies).toHaveLength(2);
    for (const body of bodies) expect(body).toMatchObject({ model: "gpt-5-mini", reasoning: { effort: "low", summary: "auto" }, store: false, include: ["reasoning.encrypted_content"] });
    // Round 2 carries round 1's reasoning item back.
    const input = bodies[1]!["input"] as Record<string, unknown>[];
    expect(input.map((item) => item["type"] ?? item["role"])).toEqual(["system", "user", "reasoning", "function_call", "function_call_output"]);
    expect(input[2]).toMatchObject({ type: "reasoning", encrypted_content: expect.stringMatching(/^enc:rs_/) });
  });

  it("refuses an unknown --api, naming the choices", async () => {
    const result = await runCli(["run", "hi", "--api", "completions"], { env: cleanEnv({ OPENAI_BASE_URL: server.baseURL }) });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--api must be "chat" (Chat Completions) or "responses" (the Responses API), got "completions"');
  });
});
