// One process of a Responses API run with reasoning, spawned by reasoning-restore.test.ts. Plain
// JavaScript on the built package (dist/), as a user's program runs it; the model is the real
// client (`ModelClient.resolve({ api: "responses" })`) talking HTTP to the parent's loopback server.
//
// argv[2] is JSON: { baseURL, db, report, runId, phase }. Phases:
//   park     run until the plan update waits for approval, checkpoint to SQLite, exit
//   approve  load the run from SQLite in this new process, approve, finish (the next request
//            must carry the reasoning items of round 1, from the snapshot)
import { writeFileSync } from "node:fs";
import { createActor } from "xstate";
import { z } from "zod";
import { checkpointAgent, createReactMachine, defineTool, human, ModelClient, restoreAgent } from "../../dist/index.js";
import { SqliteCheckpointStore } from "../../dist/sqlite.js";

const args = JSON.parse(process.argv[2]);
const store = new SqliteCheckpointStore({ path: args.db });
const plans = [];
const updatePlan = defineTool({
  name: "update_plan",
  description: "Update the plan.",
  parameters: z.object({ plan: z.string() }),
  execute: ({ plan }) => (plans.push(plan), "plan updated"),
});
const modelClient = ModelClient.resolve({
  baseURL: args.baseURL,
  apiKey: "test-key",
  model: "gpt-5",
  api: "responses",
  stream: false,
  reasoning: { effort: "low", summary: "detailed" },
});
const machine = createReactMachine({
  name: "Poet",
  modelClient,
  tools: [updatePlan],
  constraints: [(call) => (call.name === "update_plan" ? { decision: "pending", reason: "plans are reviewed" } : { decision: "allow" })],
  // The recorded run sent no system prompt in `input`.
  contextBuilder: (input) => [...input.messages],
  config: { toolChoice: "auto" },
  configFile: false,
});

const PROMPT =
  'Compose a 12-line poem where the first letters of the odd-numbered lines form the name "SAMIRA" and the first letters of the even-numbered lines spell out "DAWOOD." Additionally, the first letter of each word in every line should create the capital of a country';

const actor =
  args.phase === "park"
    ? createActor(machine, { input: { runId: args.runId, messages: [human(PROMPT)] } })
    : createActor(machine, { snapshot: restoreAgent(machine, store.load(args.runId)) });
const checkpoints = checkpointAgent(actor, store);
const settled = new Promise((resolve) => {
  actor.subscribe((snapshot) => {
    const waiting = snapshot.matches({ Evaluating: { ChildRunning: { ToolExecutor: "AwaitingApproval" } } });
    if (snapshot.status === "done" || (args.phase === "park" && waiting)) resolve(snapshot);
  });
});
actor.start();
if (args.phase === "approve") actor.send({ type: "guard.approve", callId: "call_gL7JE6GDeGGsFubqO2XGytyO" });
const snapshot = await settled;
await checkpoints.flush();
actor.stop();

const saved = store.load(args.runId);
writeFileSync(
  args.report,
  JSON.stringify({
    phase: args.phase,
    pid: process.pid,
    plans,
    saved: store.list(),
    savedMessages: saved.snapshot.context.state.messages,
    output: snapshot.output ? { status: snapshot.output.status, finalAnswer: snapshot.output.finalAnswer, usage: snapshot.output.usage } : null,
  }),
);
store.close();
