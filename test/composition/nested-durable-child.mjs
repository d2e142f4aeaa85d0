// One process of a nested durable run, spawned by nested-durable.test.ts. Plain JavaScript on
// purpose, importing jianmu as compiled by the test (see durable-run-child.mjs for why).
//
// Three agents: Desk → (tool "delegate") Helper → (tool "delegate") Helper → publish (needs
// approval). The two nested agents share their machine name and their tool name, so only the
// snapshot's structure tells them apart on restore.
//
// argv[2] is JSON: { dist, db, ledger, report, runId, phase }. Phases:
//   park     run until the innermost agent waits for approval, checkpoint, exit
//   approve  restore the run from the store, approve the waiting call (by its agentPath), finish
// Each phase's scripted models hold only the responses that phase should consume.
import { appendFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { createActor } from "xstate";
import { z } from "zod";

const args = JSON.parse(process.argv[2]);
const load = (path) => import(pathToFileURL(join(args.dist, path)).href);
const { createReactMachine } = await load("machines/react-machine.js");
const { agentTool } = await load("machines/composition/agent-tool.js");
const { pendingApprovals } = await load("machines/contract/approvals.js");
const { restoreAgent, runStatusOf } = await load("machines/persistence/persistence.js");
const { SqliteCheckpointStore } = await load("machines/persistence/checkpoints/sqlite-store.js");
const { checkpointAgent } = await load("machines/persistence/checkpoints/checkpoint-agent.js");
const { scriptedModel } = await load("testing/scripted-model.js");
const { defineTool } = await load("tools/tool.js");
const { human } = await load("actors/messages.js");

const scripts = {
  park: {
    desk: [{ toolCalls: [{ id: "d1", name: "delegate", arguments: { input: "get the notice published" } }] }],
    outer: [{ toolCalls: [{ id: "h1", name: "delegate", arguments: { input: "publish the notice" } }] }],
    inner: [{ toolCalls: [{ id: "p1", name: "publish", arguments: { text: "notice" } }] }],
  },
  approve: {
    desk: [{ content: "Desk: the notice is out." }],
    outer: [{ content: "Outer helper: inner helper published it." }],
    inner: [{ content: "Inner helper: published notice." }],
  },
};
const models = Object.fromEntries(Object.entries(scripts[args.phase]).map(([agent, turns]) => [agent, scriptedModel(turns)]));
const store = new SqliteCheckpointStore({ path: args.db });

// The side effect lives outside the process, so executions can be counted across processes.
const publish = defineTool({
  name: "publish",
  description: "Publish a text (not idempotent)",
  parameters: z.object({ text: z.string() }),
  execute: ({ text }) => {
    appendFileSync(args.ledger, `published ${text} in pid ${process.pid}\n`);
    return `published ${text}`;
  },
});
const approval = (call) => (call.name === "publish" ? { decision: "pending", reason: "a person publishes" } : { decision: "allow" });

const inner = createReactMachine({ name: "Helper", modelClient: models.inner, tools: [publish], constraints: [approval], journal: store, configFile: false });
const outer = createReactMachine({
  name: "Helper",
  modelClient: models.outer,
  tools: [agentTool(inner, { name: "delegate", description: "Hand a task to a helper" })],
  journal: store,
  configFile: false,
});
const desk = createReactMachine({
  name: "Desk",
  modelClient: models.desk,
  tools: [agentTool(outer, { name: "delegate", description: "Hand a task to a helper" })],
  journal: store,
  configFile: false,
});

const listedBefore = store.list();
const actor =
  args.phase === "park"
    ? createActor(desk, { input: { runId: args.runId, messages: [human("Publish the notice")] } })
    : createActor(desk, { snapshot: restoreAgent(desk, store.load(args.runId)) });
const checkpoints = checkpointAgent(actor, store);

const settled = new Promise((resolve) => {
  actor.subscribe((snapshot) => {
    if (snapshot.status === "done" || (args.phase === "park" && runStatusOf(snapshot) === "awaitingApproval")) resolve(snapshot);
  });
});
actor.start();
let restoredPending;
if (args.phase === "approve") {
  restoredPending = pendingApprovals(actor.getSnapshot());
  for (const call of restoredPending) actor.send({ type: "guard.approve", callId: call.callId, agentPath: call.agentPath });
}
const snapshot = await settled;
await checkpoints.flush();
const pending = snapshot.status === "active" ? pendingApprovals(snapshot) : [];
actor.stop();

const output = snapshot.output;
writeFileSync(
  args.report,
  JSON.stringify({
    phase: args.phase,
    listedBefore,
    saved: store.list(),
    pending,
    restoredPending: restoredPending ?? null,
    requests: Object.fromEntries(Object.entries(models).map(([agent, model]) => [agent, model.requests.length])),
    remaining: Object.fromEntries(Object.entries(models).map(([agent, model]) => [agent, model.remaining])),
    lastMessages: Object.fromEntries(Object.entries(models).map(([agent, model]) => [agent, model.requests.at(-1)?.messages.at(-1) ?? null])),
    output: output ? { status: output.status, finalAnswer: output.finalAnswer, usage: output.usage } : null,
  }),
);
store.close();
