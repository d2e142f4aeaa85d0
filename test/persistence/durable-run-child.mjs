// One process of a durable run, spawned by durable-run.test.ts. Plain JavaScript on purpose: it
// runs under bare `node` and imports jianmu as compiled by the test (`tsc -p tsconfig.build.json`
// into a scratch directory), exactly as a user's program would run the built package.
//
// argv[2] is JSON: { dist, db, ledger, report, runId, phase }. Phases:
//   park                run until the call waits for approval, checkpoint, exit
//   approve             load the run, approve the call, finish
//   crash-after-journal run; die right after the journal recorded the call's completion
//   crash-inside-tool   run; die inside the tool, after its side effect, before it returns
//   resume              load the run and finish it (no approval involved)
// Each phase's scripted model holds only the responses that phase should consume; the report
// (written synchronously, so it survives process.exit) says how many requests it got.
import { appendFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { createActor } from "xstate";
import { z } from "zod";

const args = JSON.parse(process.argv[2]);
const load = (path) => import(pathToFileURL(join(args.dist, path)).href);
const { createReactMachine } = await load("machines/react-machine.js");
const { restoreAgent } = await load("machines/persistence/persistence.js");
const { SqliteCheckpointStore } = await load("machines/persistence/checkpoints/sqlite-store.js");
const { checkpointAgent } = await load("machines/persistence/checkpoints/checkpoint-agent.js");
const { scriptedModel } = await load("testing/scripted-model.js");
const { defineTool } = await load("tools/tool.js");
const { human } = await load("actors/messages.js");

const CALL = { id: "call_pay", name: "pay_invoice", arguments: { invoice: "INV-7" } };
const scripts = {
  park: [{ toolCalls: [CALL] }],
  approve: [{ content: "Invoice INV-7 is paid." }],
  "crash-after-journal": [{ toolCalls: [CALL] }],
  "crash-inside-tool": [{ toolCalls: [CALL] }],
  resume: [{ content: "Done." }],
};

const model = scriptedModel(scripts[args.phase]);
const report = (extra) =>
  writeFileSync(args.report, JSON.stringify({ phase: args.phase, requests: model.requests.length, remaining: model.remaining, ...extra }));
const store = new SqliteCheckpointStore({ path: args.db });

// The side effect lives outside the process, so executions can be counted across processes.
const payInvoice = defineTool({
  name: "pay_invoice",
  description: "Pay an invoice (not idempotent: paying twice pays twice)",
  parameters: z.object({ invoice: z.string() }),
  execute: ({ invoice }) => {
    appendFileSync(args.ledger, `paid ${invoice} in pid ${process.pid}\n`);
    if (args.phase === "crash-inside-tool") {
      report({ died: "inside the tool" });
      process.exit(18);
    }
    return `paid ${invoice}`;
  },
});

// The store is the journal; in one phase it is wrapped to die right after recording a completion.
const journal =
  args.phase === "crash-after-journal"
    ? {
        lookup: (key) => store.lookup(key),
        started: (key, name) => store.started(key, name),
        completed: (key, outcome) => {
          store.completed(key, outcome);
          report({ died: "after the journal recorded the completion" });
          process.exit(17);
        },
        forget: (runId) => store.forget(runId),
      }
    : store;

// The approval flow (park, approve) asks a person before paying; the crash flow pays directly.
const approvals = args.phase === "park" || args.phase === "approve";
const needsApproval = (call) =>
  approvals && call.name === "pay_invoice" ? { decision: "pending", reason: "payments need approval" } : { decision: "allow" };

const machine = createReactMachine({ name: "Payments", modelClient: model, tools: [payInvoice], constraints: [needsApproval], journal });

const fresh = args.phase === "park" || args.phase.startsWith("crash-");
const listed = store.list();
const actor = fresh
  ? createActor(machine, { input: { runId: args.runId, messages: [human("Pay invoice INV-7")] } })
  : createActor(machine, { snapshot: restoreAgent(machine, store.load(args.runId)) });
const checkpoints = checkpointAgent(actor, store);

const settled = new Promise((resolve) => {
  actor.subscribe((snapshot) => {
    const waiting = snapshot.matches({ Evaluating: { ChildRunning: { ToolExecutor: "AwaitingApproval" } } });
    if (snapshot.status === "done" || (args.phase === "park" && waiting)) resolve(snapshot);
  });
});
actor.start();
if (args.phase === "approve") actor.send({ type: "guard.approve", callId: CALL.id });
const snapshot = await settled;
await checkpoints.flush();
actor.stop();

const output = snapshot.output;
report({
  listedBefore: listed,
  saved: store.list(),
  output: output ? { status: output.status, finalAnswer: output.finalAnswer, rounds: output.rounds, termination: output.termination ?? null } : null,
  observations: output ? output.messages.filter((m) => m.role === "tool").map((m) => m.content) : [],
  lastRequestMessage: model.requests.at(-1)?.messages.at(-1) ?? null,
});
store.close();
