/**
 * An approval that outlives the process. The run parks in AwaitingApproval before paying an
 * invoice; we save it with `persistAgent` into a SQLite file and stop it. Later (here: a fresh
 * store, machine and actor, as another process would build them) `restoreAgent` brings the run
 * back, the approval arrives, and the run pays and finishes. The store is also the tool journal,
 * so a restored run never pays twice.
 *
 * Offline by default (scripted turns over a loopback OpenAI-compatible server); with
 * OPENAI_API_KEY or OPENAI_BASE_URL set, the same code asks the real model.
 * Run: node examples/run.mjs durable-approval   (test: npx vitest run examples/durable-approval.test.ts)
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createActor, toPromise, waitFor } from "xstate";
import { z } from "zod";
import {
  pendingApprovals,
  createReactMachine,
  defineTool,
  human,
  persistAgent,
  requireApproval,
  restoreAgent,
  type AgentOutput,
  type CheckpointSummary,
  type ModelClient,
} from "../index.js";
import { SqliteCheckpointStore } from "../sqlite.js";
import { connectModel, type EndpointOptions } from "./support/endpoint.js";
import { failIfFailed } from "./support/outcome.js";
import { scriptedTurns, textTurn, toolCallTurn } from "./support/turns.js";

export const TASK = "Pay invoice INV-1042 from Acme GmbH: EUR 1,250.";

export const OFFLINE_TURNS = scriptedTurns([
  toolCallTurn([{ id: "call_pay_1", name: "pay_invoice", args: { invoice: "INV-1042", amountEur: 1250 } }]),
  textTurn("Invoice INV-1042 (EUR 1,250) is paid."),
]);

/** The payments made, across "processes" (a stand-in for your bank API). */
type Ledger = { invoice: string; amountEur: number }[];

/** The same machine definition in both processes: same name, tools, guard and journal. */
function buildMachine(modelClient: ModelClient, store: SqliteCheckpointStore, ledger: Ledger) {
  const payInvoice = defineTool({
    name: "pay_invoice",
    description: "Pay a supplier invoice by bank transfer.",
    parameters: z.object({ invoice: z.string().min(1), amountEur: z.number().positive() }),
    effectTags: ["payment"],
    execute: ({ invoice, amountEur }) => {
      ledger.push({ invoice, amountEur });
      return `transfer of EUR ${amountEur} for ${invoice} sent`;
    },
  });
  return createReactMachine({
    // restoreAgent checks the saved run's machine name against this one.
    name: "PaymentsAgent",
    modelClient,
    tools: [payInvoice],
    constraints: [requireApproval({ effectTags: ["payment"], reason: "payments need a second pair of eyes" })],
    journal: store,
  });
}

export interface DurableResult {
  output: AgentOutput;
  /** What the store listed after the first process stopped. */
  parked: CheckpointSummary[];
  ledger: Ledger;
}

export async function main(options: EndpointOptions & { log?: (line: string) => void } = {}): Promise<DurableResult> {
  const log = options.log ?? console.log;
  const endpoint = await connectModel(OFFLINE_TURNS, options);
  log(endpoint.banner);
  const dir = mkdtempSync(join(tmpdir(), "jianmu-durable-"));
  const dbPath = join(dir, "runs.db");
  const ledger: Ledger = [];
  try {
    // ---- Process 1: run until the payment waits for approval, save, stop. ----
    const runId = await (async () => {
      const store = new SqliteCheckpointStore({ path: dbPath });
      const actor = createActor(buildMachine(endpoint.modelClient, store, ledger), { input: { messages: [human(TASK)] } });
      actor.on("guard.approval.requested", (event) => log(`approval requested: ${event.name} ${event.arguments} (${event.reason})`));
      actor.start();
      // Parked, or finished without ever asking (a failed model call): never wait for a request that may not come.
      const settled = await waitFor(actor, (snapshot) => snapshot.status !== "active" || pendingApprovals(snapshot).length > 0);
      if (settled.status === "done") {
        store.close();
        failIfFailed(settled.output!, log);
      }
      const saved = persistAgent(actor);
      store.save(saved.runId, saved);
      log(`saved run ${saved.runId} in ${saved.state} to ${dbPath}`);
      actor.stop();
      store.close();
      return saved.runId;
    })();

    // ---- Process 2 (hours later): list, restore, approve, finish. ----
    const store = new SqliteCheckpointStore({ path: dbPath });
    try {
      const parked = store.list();
      log(`waiting runs: ${parked.map((run) => `${run.runId} (${run.status})`).join(", ")}`);
      const machine = buildMachine(endpoint.modelClient, store, ledger);
      const actor = createActor(machine, { snapshot: restoreAgent(machine, store.load(runId)) });
      actor.start();
      // The restored snapshot says which calls wait: approve each (here, without looking).
      for (const call of pendingApprovals(actor.getSnapshot())) {
        log(`approving ${call.name} (${call.callId})`);
        actor.send({ type: "guard.approve", callId: call.callId });
      }
      const output = await toPromise(actor);
      store.delete(runId);
      failIfFailed(output, log);
      log(output.finalAnswer ?? "");
      return { output, parked, ledger };
    } finally {
      store.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await endpoint.close();
  }
}
