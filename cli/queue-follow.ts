import { createInterface } from "node:readline/promises";
import type { PendingApproval } from "../machines/contract/approvals.js";
import type { AgentOutput } from "../machines/contract/context.js";
import type { RunStore } from "../queue/run-store.js";
import type { QueueStatus } from "../queue/schemas.js";
import { describeCall } from "./approvals.js";
import type { Terminal } from "./progress.js";

/** How often an attached `jianmu run --store` looks at its run while it waits for the answer. */
const LOOK_EVERY_MS = 300;

export interface FollowOptions {
  /** The store flags to repeat in the approve/reject command lines it suggests. */
  storeFlags: string;
  /** Where to ask, when it is a terminal: each waiting call is put as a y/n question. */
  input: NodeJS.ReadableStream & { isTTY?: boolean };
  /** Ctrl-C at the question (the terminal's raw mode keeps it from the process). */
  onCtrlC: () => void;
}

/**
 * Wait for a queued run's output, saying what it is doing meanwhile: picked up by a worker, and
 * parked on approval, with the commands that decide it. On a terminal each waiting call is also
 * asked (y/n) and the answer sent to the store; Ctrl-C leaves the run as it is.
 */
export async function followRun(store: RunStore, runId: string, ctx: Terminal, options: FollowOptions): Promise<AgentOutput> {
  let last: QueueStatus | undefined;
  const told = new Set<string>();
  const ask = options.input.isTTY === true ? asker(store, runId, ctx, options) : undefined;
  const look = async () => {
    const status = await store.status(runId).catch(() => undefined);
    if (!status) return;
    if (status.status === "running" && last !== "running") ctx.err.write(`run ${runId} is running${status.owner ? ` on worker ${status.owner}` : ""}\n`);
    last = status.status;
    if (status.status !== "awaitingApproval") return;
    for (const call of status.pendingApprovals) {
      if (told.has(call.callId)) continue;
      told.add(call.callId);
      ctx.err.write(`run ${runId} waits for approval of ${call.callId}: ${describeCall(call)}${call.reason ? ` (${call.reason})` : ""}\n`);
      if (ask) ask.ask(call);
      else ctx.err.write(`  approve it: jianmu approve ${runId} ${call.callId} ${options.storeFlags}\n  reject it:  jianmu reject ${runId} ${call.callId} ${options.storeFlags} --reason "<why>"\n`);
    }
  };
  let looking = Promise.resolve();
  const timer = setInterval(() => (looking = looking.then(look)), LOOK_EVERY_MS);
  try {
    return await store.wait(runId);
  } finally {
    clearInterval(timer);
    ask?.close();
  }
}

/** The y/n questions of an attached run on a terminal, one at a time. */
function asker(store: RunStore, runId: string, ctx: Terminal, options: FollowOptions) {
  const rl = createInterface({ input: options.input, output: ctx.err, terminal: true });
  // Leaving the question leaves the run waiting, as Ctrl-C anywhere else does.
  rl.on("SIGINT", options.onCtrlC);
  let queue = Promise.resolve();
  const question = async (call: PendingApproval) => {
    for (;;) {
      const answer = (await rl.question(`  approve ${call.name}? [y]es / [n]o: `)).trim().toLowerCase();
      if (answer === "y" || answer === "yes") {
        await store.send(runId, { type: "guard.approve", callId: call.callId });
        return ctx.err.write(`  ${call.callId} approved\n`);
      }
      if (answer === "n" || answer === "no") {
        const reason = (await rl.question("  reason (optional): ")).trim();
        await store.send(runId, { type: "guard.reject", callId: call.callId, ...(reason ? { reason } : {}) });
        return ctx.err.write(`  ${call.callId} rejected\n`);
      }
      ctx.err.write('  please answer "y" or "n"\n');
    }
  };
  return {
    ask(call: PendingApproval) {
      queue = queue.then(() => question(call)).then(
        () => undefined,
        () => undefined,
      );
    },
    close: () => rl.close(),
  };
}
