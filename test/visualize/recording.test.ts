import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { z } from "zod";
import { human } from "../../actors/messages.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import { defineTool } from "../../tools/tool.js";
import { analyzeRecording } from "../../visualize/analysis.js";
import { renderViewer } from "../../visualize/viewer.js";
import { JsonlWriter, RecordingError } from "../../visualize/jsonl-writer.js";
import { recordRun } from "../../visualize/recorder.js";
import { readRecording, RecordingFormatError } from "../../visualize/recording-reader.js";
import { RECORDING_FORMAT, type RecordLine } from "../../visualize/recording-format.js";
import { recordApprovalRun } from "./approval-run.js";

const OUT = join("test-output", "visualize", "recording");
mkdirSync(OUT, { recursive: true });

async function allLines(path: string): Promise<RecordLine[]> {
  const { lines } = await readRecording(path);
  const out: RecordLine[] = [];
  for await (const line of lines) out.push(line);
  return out;
}

describe("a recorded run", () => {
  const path = join(OUT, "approval.jsonl");
  const run = recordApprovalRun(path);

  test("starts with a header holding the machine's chart and definition, and ends with an end line", async () => {
    await run;
    const first = JSON.parse(readFileSync(path, "utf8").split("\n")[0]!) as Record<string, unknown>;
    expect(first).toMatchObject({ k: "header", format: RECORDING_FORMAT, version: 1, machineId: "ReActAgent" });
    const { header } = await readRecording(path);
    expect(header.chart.root.children.map((s) => s.key)).toEqual(["Initialising", "Evaluating", "CheckBudget", "Retry", "Succeeded", "Failed"]);
    expect(JSON.parse(header.definition)).toMatchObject({ id: "ReActAgent", initial: "Initialising" });
    const lines = await allLines(path);
    const end = lines[lines.length - 1]!;
    expect(end.k).toBe("end");
    if (end.k === "end") {
      expect(end.lines).toBe(readFileSync(path, "utf8").trimEnd().split("\n").length);
      expect(end.dropped).toBe(0);
    }
  });

  test("holds every inspection event of the run, in order, and every emitted event", async () => {
    const { live } = await run;
    const lines = await allLines(path);
    const kinds: Record<string, string> = {
      "@xstate.actor": "actor",
      "@xstate.event": "event",
      "@xstate.snapshot": "snapshot",
      "@xstate.microstep": "microstep",
      "@xstate.action": "action",
    };
    const recorded = lines.filter((l) => l.k !== "emit" && l.k !== "end").map((l) => l.k);
    expect(recorded).toEqual(live.map((e) => kinds[e.type]));
    const emitted = lines.filter((l) => l.k === "emit").map((l) => (l.k === "emit" ? l.event.type : ""));
    expect(emitted.filter((t) => t === "tool.call.completed")).toHaveLength(3);
    expect(emitted).toContain("guard.approval.requested");
    expect(emitted[emitted.length - 1]).toBe("loop.terminated");
    // Microsteps name the eventless transitions: that is how CheckAbort and friends become visible.
    const taken = lines.flatMap((l) => (l.k === "microstep" ? l.transitions.map((t) => t.id) : []));
    expect(taken).toContain("ReActAgent.CheckBudget#always#0");
    expect(taken.filter((id) => id?.startsWith("ReActAgent.Evaluating.CheckAbort#always#"))).toHaveLength(3);
  });

  test("stores snapshots as diffs: the conversation is written once, not with every step", async () => {
    await run;
    const text = readFileSync(path, "utf8");
    const question = "What is (2 + 3) * 4? Save the result as a note.";
    expect(text.split(question).length - 1).toBe(1);
    const lines = await allLines(path);
    const rootSnapshots = lines.filter((l) => l.k === "snapshot" && l.value !== undefined);
    expect(rootSnapshots.length).toBeGreaterThan(10);
    // Only the first root snapshot sets the whole context; the others change parts of it.
    const wholeSets = rootSnapshots.filter((l) => l.k === "snapshot" && l.context?.some((op) => op.path.length === 0));
    expect(wholeSets).toHaveLength(1);
    const pushes = rootSnapshots.flatMap((l) => (l.k === "snapshot" ? (l.context ?? []).filter((op) => op.op === "push" && op.path.join(".") === "state.messages") : []));
    // Seven messages in the end: the question came with the first context, six were appended.
    expect(pushes.reduce((sum, op) => sum + (op.op === "push" ? op.items.length : 0), 0)).toBe(6);
  });

  test("analysis counts visits, transitions and the calls of the run", async () => {
    await run;
    const a = await analyzeRecording(path);
    expect(a.visits).toMatchObject({
      "ReActAgent.Initialising": 1,
      "ReActAgent.Evaluating": 3,
      "ReActAgent.Evaluating.CheckAbort": 3,
      "ReActAgent.Evaluating.ChildRunning.AgentLLM": 3,
      "ReActAgent.Evaluating.ChildRunning.ToolExecutor.Preflight": 2,
      "ReActAgent.Evaluating.ChildRunning.ToolExecutor.AwaitingApproval": 1,
      "ReActAgent.Evaluating.ChildRunning.ToolExecutor.Executing": 2,
      "ReActAgent.Evaluating.ChildRunning.StateCondition": 3,
      "ReActAgent.CheckBudget": 2,
      "ReActAgent.Retry": 2,
      "ReActAgent.Succeeded": 1,
    });
    expect(a.visits["ReActAgent.Failed"]).toBeUndefined();
    expect(a.transitions["ReActAgent.Evaluating.ChildRunning.ToolExecutor.AwaitingApproval#guard.approve#0"]).toBe(1);
    expect(a.timeline.map((e) => `${e.kind}:${e.name}:${e.status}`)).toEqual([
      "model:scripted:ok",
      "tool:add:ok",
      "model:scripted:ok",
      "approval:save_note:approved",
      "tool:multiply:ok",
      "tool:save_note:ok",
      "model:scripted:ok",
    ]);
    expect(a.timeline.filter((e) => e.kind === "model").map((e) => e.tokens?.totalTokens)).toEqual([204, 281, 328]);
    expect(a.summary).toMatchObject({ status: "succeeded", rounds: 3, iterations: 3, modelCalls: 3, toolCalls: 3, approvals: 1 });
    expect(a.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant", "tool", "tool", "assistant"]);
  });
});

describe("a failed run", () => {
  test("is recorded and shown as failed, with the reason and the Failed state entered", async () => {
    const path = join(OUT, "failed.jsonl");
    const noop = defineTool({ name: "noop", description: "Does nothing.", parameters: z.object({}), execute: () => "ok" });
    const machine = createReactMachine({
      modelClient: scriptedModel([{ toolCalls: [{ name: "noop", arguments: {} }] }]),
      tools: [noop],
      config: { maxIterations: 1 },
    });
    const { output } = await recordRun(machine, { messages: [human("loop forever")] }, { path });
    expect(output.termination?.reason).toBe("maxIterations");
    const a = await analyzeRecording(path);
    expect(a.summary).toMatchObject({ status: "failed", reason: "maxIterations", toolCalls: 1 });
    expect(a.visits["ReActAgent.Failed"]).toBe(1);
    expect(a.visits["ReActAgent.Succeeded"]).toBeUndefined();
    expect(a.transitions["ReActAgent.CheckBudget#always#1"]).toBe(1);
    const html = await renderViewer(path);
    expect(html).toContain('data-status="failed"');
    expect(html).toMatch(/data-state="ReActAgent\.Failed"[^>]*data-visits="1"/);
  });
});

describe("secrets", () => {
  // Keys in the config, in an auth header, in the user's message and in a tool's output.
  const FALLBACK_KEY = "sk-proj-Zx81kLmQ0pWnRt5vBc3Y";
  const PLAIN_KEY = "jm_live_4fG7hJ2kL9mN0pQ1"; // matches no pattern: found by its field name
  const HEADER_TOKEN = "tok_9f8e7d6c5b4a3f2e1d0c";
  const MESSAGE_KEY = "sk-ant-api03-AbCdEfGhIjKlMnOpQrSt";
  const NAMED_SECRET = "the-db-password-is-hunter2";

  test("a recording of a run whose config holds an API key contains no key and no authorization header", async () => {
    const path = join(OUT, "secrets.jsonl");
    const leak = defineTool({
      name: "read_env",
      description: "Reads the environment.",
      parameters: z.object({}),
      execute: () => `DATABASE_URL=postgres://app:${NAMED_SECRET}@db/app`,
    });
    const machine = createReactMachine({
      modelClient: scriptedModel([{ toolCalls: [{ name: "read_env", arguments: {} }] }, { content: "done" }]),
      tools: [leak],
      config: {
        resilience: { fallbacks: [{ model: "backup", apiKey: FALLBACK_KEY }, { model: "other", apiKey: PLAIN_KEY }] },
        extraParams: { headers: { Authorization: `Bearer ${HEADER_TOKEN}` }, metadata: { note: "kept" } },
      },
    });
    const { output, recording } = await recordRun(machine, { messages: [human(`my key is ${MESSAGE_KEY}, please keep it safe`)] }, { path, secrets: [NAMED_SECRET] });
    expect(output.status).toBe("succeeded");
    expect(recording.lines).toBeGreaterThan(20);
    const text = readFileSync(path, "utf8");
    for (const secret of [FALLBACK_KEY, PLAIN_KEY, HEADER_TOKEN, MESSAGE_KEY, NAMED_SECRET]) expect(text).not.toContain(secret);
    expect(text.toLowerCase()).not.toContain("authorization");
    expect(text).not.toMatch(/Bearer\s+\w/);
    // The rest of what was there is still there: the config around the keys, the message, the output.
    expect(text).toContain('"model":"backup"');
    expect(text).toContain("please keep it safe");
    expect(text).toContain("postgres://app:");
    expect(text).toContain('"note":"kept"');
  });
});

describe("the JSONL writer", () => {
  test("respects backpressure: lines written while the stream is full arrive after it drains, in order", async () => {
    const path = join(OUT, "backpressure.jsonl");
    const writer = new JsonlWriter(path);
    const filler = "x".repeat(1000);
    for (let i = 0; i < 3000; i++) writer.write({ i, filler });
    // 3 MB written synchronously: far beyond the stream's 16 KiB buffer, so most of it had to queue.
    expect(writer.pending).toBeGreaterThan(0);
    await writer.close();
    const rows = readFileSync(path, "utf8").trimEnd().split("\n").map((l) => (JSON.parse(l) as { i: number }).i);
    expect(rows).toEqual(Array.from({ length: 3000 }, (_, i) => i));
    expect(writer.dropped).toBe(0);
  });

  test("drops and counts lines past its queue budget instead of growing without bound", async () => {
    const path = join(OUT, "bounded.jsonl");
    const writer = new JsonlWriter(path, { maxQueuedBytes: 64 * 1024 });
    for (let i = 0; i < 2000; i++) writer.write({ i, filler: "y".repeat(1000) });
    await writer.close();
    expect(writer.dropped).toBeGreaterThan(0);
    const written = readFileSync(path, "utf8").trimEnd().split("\n");
    expect(written).toHaveLength(writer.lines);
    expect(writer.lines + writer.dropped).toBe(2000);
  });

  test("an unwritable path is a RecordingError naming the file", async () => {
    const blocker = join(OUT, "not-a-directory");
    writeFileSync(blocker, "");
    const writer = new JsonlWriter(join(blocker, "run.jsonl"));
    writer.write({ k: "x" });
    await expect(writer.close()).rejects.toBeInstanceOf(RecordingError);
    await expect(writer.close()).rejects.toThrow(/not-a-directory/);
  });
});

describe("reading recordings", () => {
  test("a file that is not a recording is a RecordingFormatError naming the file and line", async () => {
    const path = join(OUT, "not-a-recording.jsonl");
    writeFileSync(path, '{"hello":"world"}\n');
    await expect(readRecording(path)).rejects.toBeInstanceOf(RecordingFormatError);
    await expect(readRecording(path)).rejects.toThrow(/not-a-recording\.jsonl:1: the first line is not a jianmu\.recording header/);
  });

  test("a damaged line is reported with its line number", async () => {
    const good = readFileSync(join(OUT, "approval.jsonl"), "utf8").split("\n");
    const path = join(OUT, "damaged.jsonl");
    writeFileSync(path, [good[0], good[1], "{not json", good[2]].join("\n"));
    await expect(allLines(path)).rejects.toThrow(/damaged\.jsonl:3: not valid JSON/);
  });
});
