import { createInterface, type Interface } from "node:readline/promises";
import type { AgentEmitted } from "../machines/contract/events.js";
import type { ReactAgentRef } from "../machines/react-machine.js";
import type { Progress } from "./progress.js";

type Requested = Extract<AgentEmitted, { type: "guard.approval.requested" }>;

/** A nested agent's call goes back down its path (see docs/composition.md). */
const pathOf = (request: Requested) => (request.agentPath ? { agentPath: request.agentPath } : {});

export const NO_TTY_REASON =
  "approval is required but there is no terminal to ask on (stdin is not a TTY); run jianmu in a terminal, or pass --yes to approve every call";

/** How the user left the prompt without answering. */
export type PromptExit = "Ctrl-C" | "Ctrl-D";

export interface ApproverOptions {
  yes: boolean;
  input: NodeJS.ReadableStream & { isTTY?: boolean };
  /** Where the prompt (and what it asks about) is written: stderr. */
  output: NodeJS.WritableStream;
  /** Ctrl-C or Ctrl-D at the prompt: the run is to be cancelled. */
  onExit: (how: PromptExit) => void;
}

/** "get_weather {"city":"Paris"}": a call as the approver sees it. */
export function describeCall(call: { name: string; arguments: string }): string {
  return `${call.name} ${call.arguments || "{}"}`;
}

/** "? get_weather {"city":"Paris"} needs approval: reason" */
export function describeRequest(request: Requested): string {
  return `? ${describeCall(request)} needs approval${request.reason ? `: ${request.reason}` : ""}`;
}

/**
 * Answers the agent's approval requests: automatically with --yes, at the terminal when there is
 * one (approve / reject / edit the arguments), and otherwise by rejecting with a clear reason.
 * At the terminal the call (tool, arguments, reason) is shown right before its question.
 */
export function attachApprover(actor: ReactAgentRef, progress: Progress, options: ApproverOptions): { close(): void } {
  const queue: Requested[] = [];
  let busy = false;
  let closing = false;
  let rl: Interface | undefined;
  const interactive = options.input.isTTY === true;

  const prompt = (): Interface => {
    if (rl) return rl;
    rl = createInterface({ input: options.input, output: options.output, terminal: true });
    // In raw mode Ctrl-C reaches readline, not the process; Ctrl-D on an empty line closes it.
    rl.on("SIGINT", () => options.onExit("Ctrl-C"));
    rl.on("close", () => {
      if (!closing) options.onExit("Ctrl-D");
    });
    return rl;
  };

  const ask = async (request: Requested): Promise<void> => {
    const rl = prompt();
    options.output.write(`${describeRequest(request)}\n`);
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
        options.output.write(`  edit refused: ${refusal}\n`);
        continue;
      }
      options.output.write('  please answer "y", "n" or "e"\n');
    }
  };

  const drain = async () => {
    if (busy) return;
    busy = true;
    try {
      for (let next = queue.shift(); next && !closing; next = queue.shift()) await ask(next);
    } catch {
      // The prompt was closed under the question (Ctrl-C, Ctrl-D, the run ended): onExit has the say.
    } finally {
      busy = false;
    }
  };

  const sub = actor.on("guard.approval.requested", (request) => {
    if (options.yes) {
      progress.line(describeRequest(request));
      progress.line(`  approved (--yes)`);
      actor.send({ type: "guard.approve", callId: request.callId, ...pathOf(request) });
    } else if (!interactive) {
      // The rejection's own line (⊘ ... rejected: <reason>) says why; the reason is not printed twice.
      progress.line(describeRequest(request));
      actor.send({ type: "guard.reject", callId: request.callId, ...pathOf(request), reason: NO_TTY_REASON });
    } else {
      queue.push(request);
      void drain();
    }
  });
  return {
    close() {
      closing = true;
      sub.unsubscribe();
      rl?.close();
    },
  };
}
