import { parseArgs } from "node:util";
import type { ReactMachine } from "../machines/react-machine.js";
import { RunQueueError } from "../queue/errors.js";
import type { RunStore } from "../queue/run-store.js";
import { QueueStatusSchema, type RunCommand } from "../queue/schemas.js";
import { startWorker } from "../queue/worker.js";
import type { WorkerEvent } from "../queue/worker-events.js";
import { parse, UsageError } from "./args.js";
import { importUserModule } from "./user-module.js";
import { HELP, QUEUE_COMMANDS } from "./help.js";
import { SIGINT, type Interrupts } from "./interrupts.js";
import type { Terminal } from "./progress.js";
import { followRun } from "./queue-follow.js";
import { openStore } from "./queue-store.js";
import { human } from "../actors/messages.js";
import { attachmentParts } from "./attachments.js";

/** True when this command line belongs to the run queue (including `run --store` and `view --store`). */
export function isQueueCommand(argv: readonly string[]): boolean {
  const [command] = argv;
  return (QUEUE_COMMANDS as readonly string[]).includes(command ?? "") || ((command === "run" || command === "view") && argv.some((arg) => arg === "--store" || arg.startsWith("--store=")));
}

const OPTIONS = {
  store: { type: "string" },
  schema: { type: "string" },
  agents: { type: "string" },
  agent: { type: "string" },
  concurrency: { type: "string" },
  "lease-ms": { type: "string" },
  "poll-ms": { type: "string" },
  status: { type: "string" },
  limit: { type: "string" },
  reason: { type: "string" },
  detach: { type: "boolean" },
  json: { type: "boolean" },
  out: { type: "string" },
  checkpoint: { type: "string" },
  image: { type: "string", multiple: true },
  file: { type: "string", multiple: true },
} as const;

function whole(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || Number(value) < 1) throw new UsageError(`--${flag} must be a whole number of at least 1, got "${value}"`);
  return Number(value);
}

/** What the queue commands use: the terminal, the working folder, and the CLI's interruptions (signals). */
export type QueueContext = Terminal & { cwd: string; interrupts: Interrupts; input: NodeJS.ReadableStream & { isTTY?: boolean } };

export async function queueCommand(argv: string[], ctx: QueueContext): Promise<number> {
  const [command, ...rest] = argv as [QueueCommand, ...string[]];
  const { values, positionals } = parse(command, rest, OPTIONS) as { values: Values & { help?: boolean }; positionals: string[] };
  if (values.help) {
    ctx.out.write(`${HELP[command]}\n`);
    return 0;
  }
  // Only worker and run --store may make a new queue; the others read (or decide in) one that exists.
  const creates = command === "worker" || command === "run";
  const store = await openStore(values.store, { cwd: ctx.cwd, existing: !creates, ...(values.schema !== undefined ? { schema: values.schema } : {}) }).catch((error: unknown) => {
    if (error instanceof RunQueueError) throw new UsageError(error.message);
    throw error;
  });
  try {
    switch (command) {
      case "worker":
        return await workerCommand(store, values, ctx);
      case "run":
        return await submitCommand(store, values, positionals, ctx);
      case "runs":
        return await runsCommand(store, values, positionals, ctx);
      case "view": {
        if (positionals.length !== 1) throw new UsageError("view --store takes one run id: jianmu view --store <s> <runId> [--checkpoint id] [--out run.html]");
        const { viewStoredRun } = await import("./view-store.js");
        const storeArgs = `--store ${values.store}${values.schema !== undefined ? ` --schema ${values.schema}` : ""}`;
        const result = await viewStoredRun(store, {
          runId: positionals[0]!,
          ...(values.checkpoint !== undefined ? { checkpointId: values.checkpoint } : {}),
          storeArgs,
          outPath: values.out,
          cwd: ctx.cwd,
        });
        ctx.out.write(`wrote ${result.outPath} (${result.bytes} bytes, run ${result.status}); open it in a browser\n`);
        return 0;
      }
      default:
        return await decideCommand(command, store, values, positionals, ctx);
    }
  } catch (error) {
    if (error instanceof RunQueueError) {
      const runId = command === "runs" ? positionals[1] : positionals[0];
      ctx.err.write(`jianmu: ${error.problem === "unknown_run" && runId !== undefined ? `no run "${runId}" in this store; list its runs with: jianmu runs ${storeFlags(values)}` : error.message}\n`);
      return 2;
    }
    throw error;
  } finally {
    await store.close();
  }
}

type QueueCommand = (typeof QUEUE_COMMANDS)[number] | "run" | "view";

/** The flags that name the store, to repeat in a suggested command line. */
export function storeFlags(values: { store?: string; schema?: string }): string {
  return `--store ${values.store ?? "<s>"}${values.schema !== undefined ? ` --schema ${values.schema}` : ""}`;
}

type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>["values"];

/** A module's agents: `export function agents({ store })` (machines journaled in the store), or named machine exports. */
async function loadAgents(spec: string | undefined, store: RunStore, cwd: string): Promise<Record<string, ReactMachine>> {
  if (!spec) throw new UsageError("--agents is required: a module exporting agents({ store }) or named machines from createReactMachine(...)");
  const mod = await importUserModule(spec, cwd, { named: `--agents ${spec}`, rerun: `worker --agents ${spec} ...` });
  const isMachine = (value: unknown): value is ReactMachine => typeof value === "object" && value !== null && "config" in value && "id" in value;
  const factory = mod["agents"];
  const found = typeof factory === "function" ? ((await (factory as (deps: { store: RunStore }) => unknown)({ store })) as Record<string, unknown>) : mod;
  const agents = Object.fromEntries(Object.entries(found).filter(([name, value]) => name !== "default" && isMachine(value))) as Record<string, ReactMachine>;
  if (Object.keys(agents).length === 0) throw new UsageError(`--agents ${spec} exports no machines: export agents({ store }) returning { name: createReactMachine({ journal: store, ... }) }, or named machines`);
  return agents;
}

function describeEvent(event: WorkerEvent): string | undefined {
  switch (event.type) {
    case "worker.started":
      return `worker ${event.worker} started (agents: ${event.agents.join(", ")})`;
    case "worker.error":
      return `worker error: ${event.message} (retrying in ${event.retryInMs} ms)`;
    case "run.claimed":
      return `${event.runId}: claimed (${event.agent}${event.resumed ? ", resumed from its checkpoint" : ""})`;
    case "run.parked":
      return `${event.runId}: waiting for approval (parked)`;
    case "run.finished":
      return `${event.runId}: ${event.status}`;
    case "run.fenced":
      return `${event.runId}: taken over by another worker; stopped here`;
    case "run.abandoned":
      return `${event.runId}: given up (${event.reason})`;
    case "run.released":
      return `${event.runId}: released for another worker`;
    default:
      return undefined;
  }
}

async function workerCommand(store: RunStore, values: Values, ctx: QueueContext): Promise<number> {
  const agents = await loadAgents(values.agents, store, ctx.cwd);
  const worker = await startWorker({
    store,
    agents,
    ...(whole("concurrency", values.concurrency) !== undefined ? { concurrency: whole("concurrency", values.concurrency)! } : {}),
    ...(whole("lease-ms", values["lease-ms"]) !== undefined ? { leaseMs: whole("lease-ms", values["lease-ms"])! } : {}),
    ...(whole("poll-ms", values["poll-ms"]) !== undefined ? { pollMs: whole("poll-ms", values["poll-ms"])! } : {}),
    onEvent: (event) => {
      if (values.json) {
        if (event.type !== "agent.event") ctx.out.write(`${JSON.stringify(event)}\n`);
        return;
      }
      const line = describeEvent(event);
      if (line) ctx.out.write(`${line}\n`);
    },
  });
  // SIGINT/SIGTERM stop the worker gracefully (a second one exits at once): a clean stop exits 0.
  await new Promise<void>((done) => {
    ctx.interrupts.on(() => {
      ctx.err.write("stopping: in-flight runs reach a checkpoint and are released...\n");
      void worker.stop().then(done);
    });
  });
  return 0;
}

async function submitCommand(store: RunStore, values: Values, positionals: string[], ctx: QueueContext): Promise<number> {
  if (!values.agent) throw new UsageError('run --store needs --agent <name>: the agent a worker runs (see jianmu worker --agents)');
  if (positionals.length !== 1 || positionals[0]!.trim() === "") throw new UsageError('run --store takes one task: jianmu run --store <s> --agent <name> "<task>"');
  const task = positionals[0]!;
  const attachments = attachmentParts(values.image ?? [], values.file ?? [], ctx.cwd);
  const runId = await store.submit({ agent: values.agent, input: { messages: [human(attachments.length > 0 ? [{ type: "text", text: task }, ...attachments] : task)] } });
  if (values.detach) {
    ctx.out.write(`${runId}\n`);
    return 0;
  }
  ctx.err.write(`submitted ${runId}; waiting for a worker (Ctrl-C leaves it queued)\n`);
  const output = await followRun(store, runId, ctx, { storeFlags: storeFlags(values), input: ctx.input, onCtrlC: () => ctx.interrupts.trigger(SIGINT) });
  if (output.status === "succeeded") {
    ctx.out.write(`${output.finalAnswer ?? ""}\n`);
    return 0;
  }
  const why = output.termination?.error?.message ?? output.termination?.detail;
  ctx.err.write(`run ${runId} failed (${output.termination?.reason ?? "unknown"})${why ? `: ${why}` : ""}\n`);
  return 1;
}

async function runsCommand(store: RunStore, values: Values, positionals: string[], ctx: Terminal): Promise<number> {
  if (positionals[0] === "show") {
    const runId = positionals[1];
    if (!runId) throw new UsageError("runs show takes a run id: jianmu runs show <runId> --store <s>");
    const status = await store.status(runId);
    const finished = status.status === "succeeded" || status.status === "failed";
    const output = finished ? await store.wait(runId) : undefined;
    ctx.out.write(`${JSON.stringify({ ...status, ...(output ? { finalAnswer: output.finalAnswer, termination: output.termination } : {}) }, null, 2)}\n`);
    return 0;
  }
  if (positionals.length > 0) throw new UsageError(`runs takes no positional argument except "show <runId>", got "${positionals.join(" ")}"`);
  const status = values.status === undefined ? undefined : QueueStatusSchema.safeParse(values.status);
  if (status && !status.success) throw new UsageError(`--status must be one of ${QueueStatusSchema.options.join(", ")}, got "${values.status}"`);
  const runs = await store.list({
    ...(status?.success ? { status: status.data } : {}),
    ...(values.agent !== undefined ? { agent: values.agent } : {}),
    ...(whole("limit", values.limit) !== undefined ? { limit: whole("limit", values.limit)! } : {}),
  });
  if (values.json) {
    for (const run of runs) ctx.out.write(`${JSON.stringify(run)}\n`);
    return 0;
  }
  if (runs.length === 0) ctx.out.write("no runs\n");
  for (const run of runs) {
    const pending = run.pendingApprovals.length > 0 ? `  pending: ${run.pendingApprovals.map((p) => `${p.callId} (${p.name})`).join(", ")}` : "";
    ctx.out.write(`${run.runId}  ${run.status}  ${run.agent}  ${new Date(run.updatedAt).toISOString()}${run.owner ? `  owner ${run.owner}` : ""}${pending}\n`);
  }
  return 0;
}

async function decideCommand(command: "approve" | "reject" | "cancel", store: RunStore, values: Values, positionals: string[], ctx: Terminal): Promise<number> {
  const [runId, callId, ...extra] = positionals;
  if (!runId || extra.length > 0 || (command === "cancel" && callId !== undefined)) {
    throw new UsageError(command === "cancel" ? "cancel takes a run id: jianmu cancel <runId> --store <s>" : `${command} takes a run id and optionally a call id: jianmu ${command} <runId> [callId] --store <s>`);
  }
  const reason = values.reason;
  if (command === "cancel") {
    await store.send(runId, { type: "agent.cancel", ...(reason !== undefined ? { reason } : {}) });
    ctx.out.write(`${runId}: cancel sent\n`);
    return 0;
  }
  let calls = callId !== undefined ? [callId] : [];
  if (callId === undefined) {
    const status = await store.status(runId);
    if (status.status === "succeeded" || status.status === "failed") throw new RunQueueError("finished_run", `run ${runId} already ${status.status}; there is nothing to ${command}`);
    calls = status.pendingApprovals.map((p) => p.callId);
  }
  if (calls.length === 0) throw new RunQueueError("not_pending", `run ${runId} has no call waiting for approval (see jianmu runs show ${runId})`);
  for (const id of calls) {
    const event: RunCommand = command === "approve" ? { type: "guard.approve", callId: id } : { type: "guard.reject", callId: id, ...(reason !== undefined ? { reason } : {}) };
    const recorded = await store.send(runId, event);
    ctx.out.write(`${runId}: ${id} ${command === "approve" ? "approved" : "rejected"}${recorded ? "" : " (already decided)"}\n`);
  }
  return 0;
}
