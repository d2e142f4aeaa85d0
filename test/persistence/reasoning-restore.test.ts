import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startOpenAIServer, type OpenAIServer } from "../../testing/openai-server.js";
import { loadRecording, replayInteractions } from "../../testing/recordings.js";

/**
 * The Responses API's reasoning items survive a checkpoint and a restore in a NEW process and go
 * back to the model unchanged. Process 1 runs round 1 of a real recorded gpt-5 run (pydantic-ai's
 * cassette: a reasoning item with encrypted content, then a tool call that waits for approval),
 * checkpoints to SQLite and exits. Process 2, sharing nothing with it but the SQLite file, restores
 * the run, approves the call and sends round 2: its request must carry the reasoning item exactly
 * as the recorded client sent it back. The loopback server (this process) replays the cassette to
 * both. The children run the built package (`npm run build` first), as a user's program would.
 */

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const child = join(root, "test/persistence/reasoning-restore-child.mjs");
const cassette = join(root, "test/fixtures/openai/pydantic-ai/test_openai_responses/test_openai_responses_thinking_with_tool_calls.yaml");
const scratch = join(root, "test-output");
let work: string;
let server: OpenAIServer;

beforeAll(async () => {
  if (!existsSync(join(root, "dist/index.js"))) throw new Error("dist/ is missing: run `npm run build` first (the child processes run the built package)");
  mkdirSync(scratch, { recursive: true });
  work = mkdtempSync(join(scratch, "reasoning-restore-"));
  server = await startOpenAIServer({ respond: replayInteractions(loadRecording(cassette).interactions) });
});

afterAll(async () => {
  await server?.close();
  if (work) rmSync(work, { recursive: true, force: true });
});

interface Report {
  phase: string;
  pid: number;
  plans: string[];
  saved: { runId: string; status: string }[];
  savedMessages: Record<string, unknown>[];
  output: { status: string; finalAnswer: string | null; usage: Record<string, number> } | null;
}

/** One phase in a fresh Node process (asynchronous: this process's server must keep answering). */
function phase(name: "park" | "approve", db: string): Promise<{ code: number | null; report: Report }> {
  const report = join(work, `${name}.json`);
  const args = { baseURL: server.baseURL, db, report, runId: "poem-run", phase: name };
  return new Promise((done, fail) => {
    const proc = spawn(process.execPath, [child, JSON.stringify(args)], { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    proc.stdout.on("data", (data: Buffer) => (output += data.toString()));
    proc.stderr.on("data", (data: Buffer) => (output += data.toString()));
    const timer = setTimeout(() => proc.kill("SIGKILL"), 60_000);
    proc.on("error", fail);
    proc.on("close", (code) => {
      clearTimeout(timer);
      if (!existsSync(report)) return fail(new Error(`phase ${name} wrote no report (exit ${code}):\n${output}`));
      done({ code, report: JSON.parse(readFileSync(report, "utf8")) as Report });
    });
  });
}

type Item = Record<string, unknown>;

describe("reasoning items across processes", () => {
  it("a run parked after round 1 and restored in a new process sends round 1's reasoning item back unchanged", async () => {
    const db = join(work, "runs.db");
    const first = await phase("park", db);
    expect(first.code).toBe(0);
    expect(first.report.output).toBeNull();
    expect(first.report.saved).toMatchObject([{ runId: "poem-run", status: "awaitingApproval" }]);
    // The checkpoint holds the reasoning item on the assistant message, encrypted content and all.
    const assistant = first.report.savedMessages.find((message) => message["role"] === "assistant")!;
    expect(assistant["reasoningItems"]).toMatchObject({
      api: "responses",
      endpoint: server.baseURL,
      model: "gpt-5",
      items: [{ id: "rs_68c42d29124881968e24c1ca8c1fc7860e8bc41441c948f6", encryptedContent: expect.stringMatching(/^gAAAAABoxC0_/), after: 0 }],
    });
    expect(server.requests).toHaveLength(1);

    const second = await phase("approve", db);
    expect(second.code).toBe(0);
    expect(second.report.pid).not.toBe(first.report.pid);
    expect(second.report.plans).toHaveLength(1);
    expect(second.report.output).toMatchObject({ status: "succeeded", finalAnswer: expect.stringMatching(/^Softly old fountains illumine alleys/) });
    expect(second.report.output!.usage).toEqual({ promptTokens: 2211, completionTokens: 2050, totalTokens: 4261, reasoningTokens: 1792, cachedPromptTokens: 2048 });

    // Round 2, sent by process 2, carries the reasoning item exactly as round 1's reply had it, and
    // exactly as the recording client (pydantic-ai) sent it back to OpenAI, which accepted it.
    expect(server.requests).toHaveLength(2);
    const sent = (server.requests[1]!.body as { input: Item[] }).input;
    const recorded = (loadRecording(cassette).interactions[1]!.request as { input: Item[] }).input;
    const reasoningOf = (items: Item[]) => items.find((item) => item["type"] === "reasoning");
    expect(reasoningOf(sent)).toEqual(reasoningOf(recorded));
    expect(sent.map((item) => item["type"] ?? item["role"])).toEqual(["user", "reasoning", "function_call", "function_call_output"]);
  }, 120_000);
});
