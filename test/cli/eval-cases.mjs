// The module of the `jianmu eval` test: an agent whose model is the endpoint in OPENAI_BASE_URL (the
// test's loopback script server), and cases that each carry their script. EVAL_FAIL adds a failing case.
import { z } from "zod";
import * as jianmu from "../../dist/index.js";

const record = jianmu.defineTool({
  name: "record",
  description: "Record a note",
  parameters: z.object({ note: z.string() }),
  execute: ({ note }) => `recorded ${note}`,
});

export const agent = jianmu.createReactMachine({
  name: "evaluated",
  modelClient: jianmu.ModelClient.resolve({ envOverride: true, model: "scripted", stream: false, resilience: { maxRetries: 0 } }),
  tools: [record],
  configFile: false,
});

const script = (calls, answer) => ({ messages: [{ role: "user", content: `SCRIPT ${JSON.stringify({ calls, answer })}` }] });

export const cases = [
  { name: "records, then answers", input: script([{ name: "record", note: "a" }], "One note."), expect: { status: "succeeded", answer: /one note/i, tools: ["record"], visits: ["Executing"] } },
  { name: "answers at once", input: script([], "Nothing to record."), expect: { tools: [], toolOrder: "exact", avoids: ["Executing"], maxRounds: 1 } },
  ...(process.env.EVAL_FAIL ? [{ name: "wants a tool it never calls", input: script([], "No."), expect: { tools: ["record"] } }] : []),
];
