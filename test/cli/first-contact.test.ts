import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { createServer } from "node:net";
import { join } from "node:path";
import { createInspectorServer } from "@statelyai/inspect/server";
import { afterEach, describe, expect, it, vi } from "vitest";
import { replies, startOpenAIServer, type OpenAIServer } from "../../testing/openai-server.js";
import { scriptedTurns, textTurn, toolCallTurn } from "../../testing/turns.js";
import { CLI, cleanEnv, cliCommand, ROOT, runCli, runInTerminal } from "./cli-harness.js";

// Several real processes per test, on a machine the whole suite shares.
vi.setConfig({ testTimeout: 90_000, hookTimeout: 90_000 });

const DEMO_ANSWER_FIRST_LINE = "Capital: The capital of Mexico is Mexico City.";
const PROMPT = /approve get_weather\? \[y\]es \/ \[n\]o \/ \[e\]dit arguments: /;
const SGR = /\x1b\[\d+(;\d+)*m/;
const tmp = (prefix: string) => mkdtempSync(join(tmpdir(), prefix));

const servers: OpenAIServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});
async function serve(respond: Parameters<typeof startOpenAIServer>[0]["respond"]): Promise<OpenAIServer> {
  const server = await startOpenAIServer({ respond });
  servers.push(server);
  return server;
}

function recordingEnds(path: string): { first: string; last: string } {
  const lines = readFileSync(path, "utf8").trim().split("\n").map((line) => JSON.parse(line) as { k: string });
  return { first: lines[0]!.k, last: lines.at(-1)!.k };
}

describe("leaving the approval prompt cancels the run cleanly", () => {
  for (const [key, name, detail] of [
    ["\x03", "Ctrl-C", "interrupted (Ctrl-C)"],
    ["\x04", "Ctrl-D", "interrupted at the approval prompt (Ctrl-D)"],
  ] as const) {
    it(`${name}: summary, recording closed, exit 130, no stack`, async () => {
      const dir = tmp("jianmu-prompt-");
      const record = join(dir, "run.jsonl");
      const result = await runInTerminal(cliCommand(["run", "--require-approval", "get_weather", "--record", record]), [{ when: PROMPT, send: key }], { env: { NO_COLOR: "1" } });
      expect(result.code).toBe(130);
      expect(result.stdout).toContain(`Agent failed (cancelled): ${detail}; nothing more was run`);
      expect(result.stdout).toMatch(/── failed after \d+ iterations/);
      expect(result.stdout).not.toMatch(/AbortError|\n\s+at /);
      expect(recordingEnds(record)).toEqual({ first: "header", last: "end" });
    });
  }

  it("shows the call (tool, arguments, reason) before its question, even with stdout redirected", async () => {
    const dir = tmp("jianmu-redirect-");
    const answer = join(dir, "answer.txt");
    const result = await runInTerminal(`${cliCommand(["run", "--require-approval", "get_weather"])} > '${answer}'`, [{ when: PROMPT, send: "y\r" }], { env: { NO_COLOR: "1" } });
    expect(result.code).toBe(0);
    const details = result.stdout.indexOf('? get_weather {"city":"Mexico City"} needs approval: you asked to approve these calls (--require-approval)');
    expect(details).toBeGreaterThan(-1);
    expect(details).toBeLessThan(result.stdout.search(PROMPT));
    // The file got the answer, and only the answer.
    expect(readFileSync(answer, "utf8")).toMatch(new RegExp(`^${DEMO_ANSWER_FIRST_LINE}\\n`));
    expect(readFileSync(answer, "utf8")).not.toMatch(/get_weather|offline demo|task:/);
  });
});

describe("signals anywhere cancel the run cleanly", () => {
  for (const [signal, code, detail] of [
    ["SIGTERM", 143, "terminated (SIGTERM)"],
    ["SIGINT", 130, "interrupted (Ctrl-C)"],
  ] as const) {
    it(`${signal} during a model call: summary, recording closed, exit ${code}`, async () => {
      const server = await serve(() => replies.hang());
      const dir = tmp("jianmu-signal-");
      const child = spawn(process.execPath, [CLI, "run", "What is 2 + 2?", "--record", "run.jsonl"], { cwd: dir, env: cleanEnv({ OPENAI_BASE_URL: server.baseURL }) });
      let stderr = "";
      child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
      child.stdout.resume();
      // Signal once the model call is under way (the server has the request).
      for (let i = 0; i < 200 && server.requests.length === 0; i++) await new Promise((r) => setTimeout(r, 25));
      expect(server.requests).toHaveLength(1);
      child.kill(signal);
      const exit = await new Promise<number | null>((resolve) => child.on("close", resolve));
      expect(exit).toBe(code);
      expect(stderr).toContain(`Agent failed (cancelled): ${detail}`);
      expect(stderr).toMatch(/recorded \d+ lines to .*run\.jsonl/);
      expect(stderr).not.toMatch(/\n\s+at /);
      expect(recordingEnds(join(dir, "run.jsonl"))).toEqual({ first: "header", last: "end" });
    });
  }
});

describe("Ctrl-C typed in the terminal while the model thinks", () => {
  it("cancels the run: summary, exit 130", async () => {
    const server = await serve(() => replies.hang());
    const result = await runInTerminal(cliCommand(["run", "What is 2 + 2?"]), [{ when: /task: What is 2 \+ 2\?/, send: "\x03" }], {
      env: { OPENAI_BASE_URL: server.baseURL, NO_COLOR: "1" },
    });
    expect(result.code).toBe(130);
    expect(result.stdout).toContain("Agent failed (cancelled): interrupted (Ctrl-C); nothing more was run");
    expect(result.stdout).not.toMatch(/\n\s+at /);
  });
});

describe("output streams", () => {
  const streamed = () => scriptedTurns([toolCallTurn([{ id: "c1", name: "calculator", args: { expression: "6 * 7" } }]), textTurn("The answer is 42, computed exactly.")]);

  it("in a terminal, streamed text is shown once and not erased", async () => {
    const server = await serve(streamed().respond);
    const result = await runInTerminal(cliCommand(["run", "What is 6 * 7?"]), [], { env: { OPENAI_BASE_URL: server.baseURL, NO_COLOR: "1" } });
    expect(result.code).toBe(0);
    expect(result.stdout.split("The answer is 42, computed exactly.")).toHaveLength(2);
    // No line clearing in the middle of the streamed words.
    expect(result.stdout).not.toMatch(/The answer[^\n]*\x1b\[K[^\n]*exactly/);
  });

  it("colour only on a terminal and without NO_COLOR", async () => {
    const coloured = await runInTerminal(cliCommand(["run"]), [], { env: {} });
    expect(coloured.code).toBe(0);
    expect(coloured.stdout).toMatch(SGR);
    const plain = await runInTerminal(cliCommand(["run"]), [], { env: { NO_COLOR: "1" } });
    expect(plain.stdout).not.toMatch(SGR);
    const env = cleanEnv();
    delete env["NO_COLOR"];
    const redirected = await runCli(["run"], { env });
    expect(redirected.stdout + redirected.stderr).not.toMatch(SGR);
  });

  it("--json: stdout holds only JSON lines", async () => {
    const result = await runCli(["run", "--json", "--require-approval", "get_weather", "--yes"]);
    expect(result.code).toBe(0);
    for (const line of result.stdout.trim().split("\n")) expect(() => JSON.parse(line), line).not.toThrow();
  });

  it("a closed stdout (| head -1) ends quietly: no EPIPE, no stack", async () => {
    const child = spawn("bash", ["-c", `set -o pipefail; ${cliCommand(["run", "--json"])} | head -1 > /dev/null; echo "status=\${PIPESTATUS[0]}" >&2`], { env: cleanEnv(), cwd: ROOT });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdout.resume();
    await new Promise((resolve) => child.on("close", resolve));
    expect(stderr).toContain("status=0");
    expect(stderr).not.toMatch(/EPIPE|Error|\n\s+at /);
  });
});

describe("usage and file problems: one line naming the flag and the fix, exit 2, before any model call", () => {
  it.each([
    ["--root missing", ["run", "What?", "--tools", "read_file", "--root", "no-such-folder"], /^jianmu: --root no-such-folder: no such folder .*; give an existing folder/],
    ["--root a file", ["run", "What?", "--root", "notes.txt"], /^jianmu: --root notes\.txt: is a file, not a folder/],
    ["--base-url without http://", ["run", "What?", "--base-url", "localhost:8000/v1"], /^jianmu: --base-url must be an http\(s\) URL such as http:\/\/127\.0\.0\.1:8000\/v1, got "localhost:8000\/v1"$/],
    ["--record under a file", ["run", "What?", "--record", "notes.txt/run.jsonl"], /^jianmu: --record notes\.txt\/run\.jsonl: .*notes\.txt is a file, not a folder; choose another path/],
    ["--record a folder", ["run", "What?", "--record", "sub"], /^jianmu: --record sub: is a folder; give a file name inside it, e\.g\. --record sub\/run\.jsonl$/],
    ["--max-iterations -1", ["run", "What?", "--max-iterations", "-1"], /^jianmu: --max-iterations must be a whole number of at least 1, got "-1" \(e\.g\. --max-iterations 10\)$/],
    ["--model without a value", ["run", "What?", "--model"], /^jianmu: --model needs a value: --model <value> \(see jianmu run --help\)$/],
    ["an unknown command's help", ["help", "launch"], /^jianmu: no help for "launch": the commands are run, eval, view, serve, worker, runs, approve, reject, cancel, help$/],
  ])("%s", async (_name, args, expected) => {
    const server = await serve(() => replies.error(500, "no model call was expected"));
    const dir = tmp("jianmu-usage-");
    writeFileSync(join(dir, "notes.txt"), "a file\n");
    mkdirSync(join(dir, "sub"));
    const result = await runCli(args, { cwd: dir, env: cleanEnv({ OPENAI_BASE_URL: server.baseURL }) });
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(result.stderr.trim()).toMatch(expected);
    expect(server.requests).toHaveLength(0);
  });

  it("a bad OPENAI_BASE_URL names the variable", async () => {
    const result = await runCli(["run", "What?"], { env: cleanEnv({ OPENAI_BASE_URL: "localhost:11434/v1" }) });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe('jianmu: OPENAI_BASE_URL must be an http(s) URL such as http://127.0.0.1:8000/v1, got "localhost:11434/v1"\n');
  });

  it("an unreadable jianmu.yaml is called unreadable, not invalid YAML", async () => {
    const dir = tmp("jianmu-yaml-");
    mkdirSync(join(dir, "jianmu.yaml"));
    const result = await runCli(["run"], { cwd: dir });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(`jianmu: ${join(dir, "jianmu.yaml")} cannot be read (EISDIR): make it a readable YAML file, or point JIANMU_CONFIG at one\n`);
    expect(result.stderr).not.toContain("not valid YAML");
  });

  it("view --out a folder", async () => {
    const dir = tmp("jianmu-view-out-");
    const recorded = await runCli(["run", "--record", "run.jsonl"], { cwd: dir });
    expect(recorded.code).toBe(0);
    mkdirSync(join(dir, "html"));
    const result = await runCli(["view", "run.jsonl", "--out", "html"], { cwd: dir });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe("jianmu: --out html: is a folder; give a file name inside it, e.g. --out html/run.html\n");
  });
});

describe("--inspect says whether an inspector listens", () => {
  const freePort = () =>
    new Promise<number>((resolve) => {
      const probe = createServer();
      probe.listen(0, "127.0.0.1", () => {
        const address = probe.address();
        probe.close(() => resolve(typeof address === "object" && address ? address.port : 0));
      });
    });

  it("nothing listening: says so, and the run goes on", async () => {
    const url = `ws://127.0.0.1:${await freePort()}`;
    const result = await runCli(["run", "--inspect"], { env: cleanEnv({ JIANMU_INSPECT_URL: url }) });
    expect(result.code).toBe(0);
    expect(result.stderr).toContain(`--inspect: no inspector is listening at ${url}; start one first (see docs/visualize.md). The run goes on without it.`);
  });

  it("an inspector server listening: says the run goes there", async () => {
    const port = await freePort();
    const server = createInspectorServer({ port, autoOpen: false });
    try {
      const url = `ws://127.0.0.1:${port}`;
      const result = await runCli(["run", "--inspect"], { env: cleanEnv({ JIANMU_INSPECT_URL: url }) });
      expect(result.code).toBe(0);
      expect(result.stderr).toContain(`--inspect: sending the run to the Stately inspector at ${url}`);
    } finally {
      server.stop();
    }
  });
});

describe("help and version", () => {
  it("--version prints the package version", async () => {
    const version = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string }).version;
    expect(await runCli(["--version"])).toMatchObject({ code: 0, stdout: `${version}\n` });
  });

  it("help <command> and <command> --help print that command's options", async () => {
    const viaHelp = await runCli(["help", "run"]);
    const viaFlag = await runCli(["run", "--help"]);
    expect(viaHelp.code).toBe(0);
    expect(viaHelp.stdout).toMatch(/^Usage: jianmu run/);
    expect(viaHelp.stdout).toContain("--max-iterations <n>");
    expect(viaFlag).toEqual(viaHelp);
    expect((await runCli(["serve", "--help"])).stdout).toMatch(/^Usage: jianmu serve \[--port <n>\]/);
    expect((await runCli(["view", "-h"])).stdout).toMatch(/^Usage: jianmu view/);
  });
});

describe("failure lines say the limit and the fix", () => {
  it("tokenBudget", async () => {
    const result = await runCli(["run", "--budget", "100"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/Agent failed \(tokenBudget\): the run spent \d+ tokens, reaching its budget of 100; raise it with --budget <tokens> or llm\.max_budget_tokens in jianmu\.yaml/);
  });

  it("maxIterations", async () => {
    const result = await runCli(["run", "--max-iterations", "1"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("Agent failed (maxIterations): no answer within 1 iteration (the limit); raise it with --max-iterations <n> or limits.max_iterations in jianmu.yaml");
  });

  it("a failing tool is named once", async () => {
    const server = await serve(scriptedTurns([toolCallTurn([{ id: "c1", name: "calculator", args: { expression: "1 / " } }]), textTurn("I could not compute it.")]).respond);
    const result = await runCli(["run", "Compute 1 / nothing"], { env: cleanEnv({ OPENAI_BASE_URL: server.baseURL }) });
    expect(result.stderr).toMatch(/✗ calculator failed: /);
    expect(result.stderr).not.toContain("calculator failed: calculator failed");
  });
});
