import { createInterface, type Interface } from "node:readline/promises";
import type { AgentEmitted } from "../machines/events.js";
import type { ReactAgentRef } from "../machines/react-machine.js";
import type { Progress } from "./progress.js";

type Requested = Extract<AgentEmitted, { type: "guard.approval.requested" }>;

/** A nested agent's call goes back down its path (see docs/composition.md). */
const pathOf = (request: Requested) => (request.agentPath ? { agentPath: request.agentPath } : {});

export const NO_TTY_REASON =
  "approval is required but there is no terminal to ask on (stdin is not a TTY); run jianmu in a terminal, or pass --yes to approve every call";

/**
 * Answers the agent's approval requests: automatically with --yes, at the terminal when there is
 * one (approve / reject / edit the arguments), and otherwise by rejecting with a clear reason.
 */
export function attachApprover(
  actor: ReactAgentRef,
  progress: Progress,
  options: { yes: boolean; input: NodeJS.ReadableStream & { isTTY?: boolean }; output: NodeJS.WritableStream },
): { close(): void } {
  const queue: Requested[] = [];
  let busy = false;
  let rl: Interface | undefined;
  const interactive = options.input.isTTY === true;

  const ask = async (request: Requested): Promise<void> => {
    rl ??= createInterface({ input: options.input, output: options.output, terminal: true });
    for (;;) {
      const answer = (await rl.question(`  approve ${request.name}? [y]es / [n]o / [e]dit arguments: `)).trim().toLowerCase();
      if (answer === "y" || answer === "yes") {
        actor.send({ type: "guard.approve", callId: request.callId, ...pathOf(request) });
        return;
      }
      if (answer === "n" || answer === "no") {
        const reason = (await rl.question("  reason (optional): ")).trim();
        actor.send({ type: "guard.reject", callId: request.callId, ...pathOf(request), ...(reason ? { reason } : {}) });
        return;
      }
      if (answer === "e" || answer === "edit") {
        const edited = (await rl.question(`  new arguments as JSON (was ${request.arguments || "{}"}): `)).trim();
        let refusal: string | undefined;
        const sub = actor.on("guard.approval.refused", (event) => {
          if (event.callId === request.callId) refusal = event.reason;
        });
        actor.send({ type: "guard.approve", callId: request.callId, ...pathOf(request), args: edited });
        sub.unsubscribe();
        if (refusal === undefined) return;
        progress.line(`  edit refused: ${refusal}`);
        continue;
      }
      progress.line('  please answer "y", "n" or "e"');
    }
  };

  const drain = async () => {
    if (busy) return;
    busy = true;
    try {
      for (let next = queue.shift(); next; next = queue.shift()) await ask(next);
    } finally {
      busy = false;
    }
  };

  const sub = actor.on("guard.approval.requested", (request) => {
    if (options.yes) {
      progress.line(`  approved (--yes)`);
      actor.send({ type: "guard.approve", callId: request.callId, ...pathOf(request) });
    } else if (!interactive) {
      progress.line(`  ${NO_TTY_REASON}`);
      actor.send({ type: "guard.reject", callId: request.callId, ...pathOf(request), reason: NO_TTY_REASON });
    } else {
      queue.push(request);
      void drain();
    }
  });
  return {
    close() {
      sub.unsubscribe();
      rl?.close();
    },
  };
}
