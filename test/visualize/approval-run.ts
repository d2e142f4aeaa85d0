import { createActor, type InspectionEvent } from "xstate";
import { z } from "zod";
import { human } from "../../actors/messages.js";
import type { ReActConfigInput } from "../../machines/contract/config.js";
import type { AgentOutput } from "../../machines/contract/context.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import { defineTool } from "../../tools/tool.js";
import { RunRecorder, type RecordingSummary } from "../../visualize/recorder.js";

/**
 * A real run for the visualize tests: two tool rounds (an add, then a multiply and a note that
 * needs approval) and a final answer. The note is approved when the approval is requested.
 * Small delays give the timeline bars some width; nothing asserts on them.
 */
export const FIXTURE_CALLS = {
  add: "call_add_1",
  multiply: "call_mul_2",
  note: "call_note_2",
} as const;

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export function approvalMachine(config: ReActConfigInput = {}) {
  const add = defineTool({
    name: "add",
    description: "Add two numbers.",
    parameters: z.object({ a: z.number(), b: z.number() }),
    parallelSafe: true,
    execute: async ({ a, b }) => {
      await pause(25);
      return a + b;
    },
  });
  const multiply = defineTool({
    name: "multiply",
    description: "Multiply two numbers.",
    parameters: z.object({ a: z.number(), b: z.number() }),
    parallelSafe: true,
    execute: async ({ a, b }) => {
      await pause(35);
      return a * b;
    },
  });
  const saveNote = defineTool({
    name: "save_note",
    description: "Save a note for the user.",
    parameters: z.object({ text: z.string() }),
    effectTags: ["writes"],
    execute: async ({ text }) => {
      await pause(20);
      return `saved: ${text}`;
    },
  });
  const model = scriptedModel([
    { content: "I'll add first.", toolCalls: [{ id: FIXTURE_CALLS.add, name: "add", arguments: { a: 2, b: 3 } }], usage: { promptTokens: 180, completionTokens: 24 }, delayMs: 40 },
    {
      content: "Now multiply and save the result.",
      toolCalls: [
        { id: FIXTURE_CALLS.multiply, name: "multiply", arguments: { a: 5, b: 4 } },
        { id: FIXTURE_CALLS.note, name: "save_note", arguments: { text: "(2 + 3) * 4 = 20" } },
      ],
      usage: { promptTokens: 240, completionTokens: 41 },
      delayMs: 55,
    },
    { content: "(2 + 3) * 4 = 20. I saved it as a note.", usage: { promptTokens: 310, completionTokens: 18 }, delayMs: 35 },
  ]);
  return createReactMachine({
    modelClient: model,
    tools: [add, multiply, saveNote],
    constraints: [(call) => (call.name === "save_note" ? { decision: "pending", reason: "save_note writes to the user's notes" } : { decision: "allow" })],
    config: { toolExecution: "parallel", ...config },
  });
}

export interface RecordedRun {
  output: AgentOutput;
  recording: RecordingSummary;
  /** Every inspection event the actor produced, as seen live. */
  live: InspectionEvent[];
}

/** Run the fixture while recording it to `path`; resolves when both the run and the file are done. */
export async function recordApprovalRun(
  path: string,
  options: { config?: ReActConfigInput; question?: string; secrets?: readonly string[]; inspect?: (event: InspectionEvent) => void } = {},
): Promise<RecordedRun> {
  const machine = approvalMachine(options.config);
  const live: InspectionEvent[] = [];
  const recorder = new RunRecorder({ path, machine, ...(options.secrets ? { secrets: options.secrets } : {}) });
  const actor = createActor(machine, {
    input: { messages: [human(options.question ?? "What is (2 + 3) * 4? Save the result as a note.")] },
    inspect: (event) => {
      live.push(event);
      recorder.record(event);
      options.inspect?.(event);
    },
  });
  recorder.attach(actor);
  actor.on("guard.approval.requested", (event) => {
    setTimeout(() => actor.send({ type: "guard.approve", callId: event.callId }), 30);
  });
  const output = await new Promise<AgentOutput>((resolve, reject) => {
    actor.subscribe({ complete: () => resolve(actor.getSnapshot().output as AgentOutput), error: reject });
    actor.start();
  });
  // The final snapshot is inspected right after observers hear "complete".
  await new Promise((resolve) => setTimeout(resolve, 0));
  return { output, recording: await recorder.close(), live };
}
