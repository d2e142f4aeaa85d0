import { spawn } from "node:child_process";
import { mkdirSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import type { StatelyInspectionEvent } from "@statelyai/inspect";
import { createInspectorServer } from "@statelyai/inspect/server";
import { beforeAll, describe, expect, test } from "vitest";
import { inspectAgent } from "../../visualize/inspector.js";
import { bundleForNode } from "./bundle.js";
import { recordApprovalRun } from "./approval-run.js";

const OUT = join("test-output", "visualize", "inspector");
mkdirSync(OUT, { recursive: true });

const API_KEY = "sk-proj-Insp3ctMe9Kx7Lq2Wz4Rt";
const QUESTION = "What is (2 + 3) * 4? Save the result as a note. Keep this prompt private.";

describe("inspectAgent", () => {
  test("does nothing in production unless forced", () => {
    const sent: unknown[] = [];
    const adapter = { send: (event: unknown) => void sent.push(event) };
    const off = inspectAgent({ mode: "adapter", adapter, env: { NODE_ENV: "production" } });
    expect(off.enabled).toBe(false);
    expect(off.reason).toMatch(/production/);
    off.inspect.next?.({ type: "@xstate.event" } as never);
    expect(sent).toEqual([]);
    const forced = inspectAgent({ mode: "adapter", adapter, env: { NODE_ENV: "production" }, force: true });
    expect(forced.enabled).toBe(true);
    forced.stop();
  });

  test("browser mode without a window says so instead of failing", () => {
    const inspector = inspectAgent({ mode: "browser" });
    expect(inspector.enabled).toBe(false);
    expect(inspector.reason).toMatch(/window/);
  });

  test("rejects an unknown mode and an adapter without send, naming the option", () => {
    expect(() => inspectAgent({ mode: "adapter" })).toThrow(/options\.adapter/);
    expect(() => inspectAgent({ mode: "telepathy" as "adapter" })).toThrow(/options\.mode/);
  });

  test("sends state names, event types, ids and counts, but no prompt text and no secrets; stops when the run ends", async () => {
    const sent: StatelyInspectionEvent[] = [];
    let stops = 0;
    const inspector = inspectAgent({ mode: "adapter", adapter: { send: (event) => void sent.push(event), stop: () => void (stops += 1) } });
    await recordApprovalRun(join(OUT, "sanitized.jsonl"), {
      question: QUESTION,
      config: { resilience: { fallbacks: [{ model: "backup", apiKey: API_KEY }] }, extraParams: { headers: { Authorization: "Bearer abc.def.ghi" } } },
      inspect: (event) => inspector.inspect.next?.(event),
    });
    // Conversion runs on 0 ms timers, the automatic stop two timers later.
    for (let i = 0; i < 4; i++) await new Promise((resolve) => setTimeout(resolve, 0));
    const text = JSON.stringify(sent);
    // The whole run went through: every actor, event and snapshot of its three rounds (74 with batched progress).
    expect(sent.length).toBeGreaterThan(60);
    for (const hidden of [QUESTION, "I'll add first.", "(2 + 3) * 4 = 20", API_KEY, "abc.def.ghi"]) expect(text).not.toContain(hidden);
    expect(text.toLowerCase()).not.toContain("authorization");
    // What the inspector is for survives.
    for (const kept of ["CheckAbort", "AwaitingApproval", "Succeeded", "guard.approve", "llm.done", "save_note", "call_note_2", "promptTokens"]) {
      expect(text).toContain(kept);
    }
    expect(text).toMatch(/‹text \d+ chars›/);
    const root = sent.find((e) => e.type === "@xstate.actor" && e.parentId === undefined);
    expect(root?.type === "@xstate.actor" && JSON.parse(root.definition ?? "{}")).toMatchObject({ id: "ReActAgent" });
    expect(stops).toBe(1);
    inspector.stop();
    expect(stops).toBe(1);
  });
});

// ---- A Node process using the WebSocket inspector exits by itself ----------------------------

/** Generous bound on how long the child may take to end; it normally ends in well under a second. */
const EXIT_BOUND_MS = 20_000;

interface ChildResult {
  code: number | null;
  exitedByItself: boolean;
  stdout: string;
  stderr: string;
}

function runChild(file: string, args: string[]): Promise<ChildResult> {
  // Node 20 has WebSocket only behind a flag; the child's receiver (not the inspector) needs it.
  const flags = typeof (globalThis as { WebSocket?: unknown }).WebSocket === "undefined" ? ["--experimental-websocket", "--no-warnings"] : [];
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...flags, file, ...args], { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, NODE_ENV: "development" } });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    let killed = false;
    const bound = setTimeout(() => {
      killed = true;
      child.kill("SIGKILL");
    }, EXIT_BOUND_MS);
    child.on("exit", (code) => {
      clearTimeout(bound);
      resolve({ code, exitedByItself: !killed, stdout, stderr });
    });
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

describe("the WebSocket inspector in a Node process", () => {
  let child = "";
  beforeAll(async () => {
    child = await bundleForNode("test/visualize/inspector-child.ts", join(OUT, "child"));
  });

  for (const mode of ["auto", "stop"] as const) {
    test(`with no inspector server (closed port), the process still exits by itself (${mode === "auto" ? "automatic stop" : "stop() called"})`, async () => {
      const port = await freePort(); // bound and released: nothing listens there now
      const result = await runChild(child, [`ws://127.0.0.1:${port}`, mode]);
      expect(result.exitedByItself, `still running after ${EXIT_BOUND_MS} ms; stderr: ${result.stderr}`).toBe(true);
      expect(result.code).toBe(0);
      expect(JSON.parse(result.stdout)).toMatchObject({ status: "succeeded", enabled: true });
    });
  }

  test("with an inspector server, the run arrives filtered and the process exits by itself", async () => {
    const port = await freePort();
    const server = createInspectorServer({ port, autoOpen: false });
    try {
      const url = `ws://127.0.0.1:${port}`;
      const result = await runChild(child, [url, "auto", url]);
      expect(result.exitedByItself, `still running after ${EXIT_BOUND_MS} ms; stderr: ${result.stderr}`).toBe(true);
      expect(result.code).toBe(0);
      const { report } = JSON.parse(result.stdout) as { report: { events: number; values: string[]; types: string[]; text: string } };
      expect(report.types).toEqual(expect.arrayContaining(["@xstate.actor", "@xstate.event", "@xstate.snapshot"]));
      expect(report.values).toContain('"Initialising"');
      expect(report.values).toContain('{"Evaluating":{"ChildRunning":{"ToolExecutor":"Executing"}}}');
      expect(report.values[report.values.length - 1]).toBe('"Succeeded"');
      for (const hidden of ["Keep this prompt private", "my secret friend", "sk-child-Qw9Er8Ty7Ui6Op5As4Df"]) expect(report.text).not.toContain(hidden);
    } finally {
      server.stop();
    }
  });
});
