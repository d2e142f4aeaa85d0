import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createActor } from "xstate";
import { human } from "../../actors/messages.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import { retriedTool } from "../core/helpers.js";
import { analyzeRecording } from "../../visualize/analysis.js";
import { RunRecorder } from "../../visualize/recorder.js";

const OUT = join("test-output", "visualize", "retried-tool");
mkdirSync(OUT, { recursive: true });

/** The run viewer's timeline keeps a retried tool call as one bar, its detail naming each failed attempt. */
describe("the run viewer's timeline, for a tool call that was retried", () => {
  it("shows one bar for the call, ending ok, with the failed attempt in its detail", async () => {
    const rate = retriedTool("rate", [new Error("503 from the rates service"), "1.08"], { retries: 2, retryDelayMs: 1 }).tool;
    const model = scriptedModel([{ content: "", toolCalls: [{ id: "call_rate", name: "rate", arguments: {} }] }, { content: "1.08" }]);
    const machine = createReactMachine({ modelClient: model, tools: [rate], configFile: false });
    const path = join(OUT, "run.jsonl");
    const recorder = new RunRecorder({ path, machine });
    const actor = createActor(machine, { input: { messages: [human("Rate?")] }, inspect: (event) => recorder.record(event) });
    recorder.attach(actor);
    await new Promise<void>((resolve, reject) => {
      actor.subscribe({ complete: () => resolve(), error: reject });
      actor.start();
    });
    await new Promise((resolve) => setTimeout(resolve, 0));
    await recorder.close();

    const { timeline } = await analyzeRecording(path);
    const bars = timeline.filter((entry) => entry.kind === "tool");
    expect(bars).toHaveLength(1);
    expect(bars[0]).toMatchObject({ id: "call_rate", status: "ok" });
    expect(bars[0]!.detail).toContain("attempt 1 of 3 failed: rate failed: 503 from the rates service; again in 1 ms");
    expect(bars[0]!.detail).toContain("output: 1.08");
  });
});
