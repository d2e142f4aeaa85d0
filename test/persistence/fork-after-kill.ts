import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { human } from "../../actors/messages.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { restoreAgent } from "../../machines/persistence/persistence.js";
import { forkRun } from "../../machines/persistence/log/fork.js";
import type { RunLogStore } from "../../machines/persistence/log/log-store.js";
import { runAgent } from "../../machines/runner.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import { defineTool } from "../../tools/tool.js";

const ROOT = resolve(import.meta.dirname, "../..");
const CHILD = join(ROOT, "test/persistence/fork-kill-child.mjs");

export type StoreSpec = { kind: "sqlite"; path: string } | { kind: "postgres"; url: string; schema: string };

const ledgerLines = (ledger: string) => (existsSync(ledger) ? readFileSync(ledger, "utf8").split("\n").filter(Boolean) : []);

/** Run the child until it dies by SIGKILL (sent by us once the tool wrote its line, or by itself). */
async function runUntilKilled(args: { store: StoreSpec; ledger: string; runId: string; phase: "inside-tool" | "after-journal" }): Promise<NodeJS.Signals | null> {
  const child = spawn(process.execPath, [CHILD, JSON.stringify({ dist: join(ROOT, "dist"), ...args })], { cwd: ROOT, stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (chunk) => (stderr += String(chunk)));
  const exited = new Promise<NodeJS.Signals | null>((resolveExit) => child.on("exit", (_code, signal) => resolveExit(signal)));
  if (args.phase === "inside-tool") {
    const started = Date.now();
    while (ledgerLines(args.ledger).length === 0) {
      if (child.exitCode !== null || Date.now() - started > 30_000) throw new Error(`the child never reached the tool: ${stderr}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    child.kill("SIGKILL");
  }
  const signal = await exited;
  if (signal !== "SIGKILL") throw new Error(`the child ended without SIGKILL (${signal}): ${stderr}`);
  return signal;
}

/**
 * A run killed (SIGKILL, a real child process) while its tool call was in flight, or right after the
 * journal recorded it, is forked from its last checkpoint (taken in `Executing`, mid-tool): the fork
 * never pays the invoice a second time.
 */
export function describeForkAfterKill(name: string, spec: (id: string) => Promise<StoreSpec>, open: (spec: StoreSpec) => Promise<RunLogStore & { close?: () => unknown }>, ledgerDir: () => string): void {
  describe(`forking a run killed mid-tool: ${name}`, () => {
    const forkAndFinish = async (phase: "inside-tool" | "after-journal") => {
      const runId = `killed-${phase}`;
      const storeSpec = await spec(runId);
      const ledger = join(ledgerDir(), `${runId}.ledger`);
      await runUntilKilled({ store: storeSpec, ledger, runId, phase });
      expect(ledgerLines(ledger)).toHaveLength(1);
      const store = await open(storeSpec);
      try {
        const history = await store.history(runId);
        const last = history.at(-1)!;
        expect(last.state).toMatch(/Executing$/);
        const forkId = await forkRun(store, runId, { from: last.checkpointId, runId: `${runId}-fork` });
        const pay = defineTool({
          name: "pay_invoice",
          description: "Pay an invoice",
          parameters: z.object({ invoice: z.string() }),
          execute: ({ invoice }) => {
            throw new Error(`the fork paid ${invoice} again`);
          },
        });
        const machine = createReactMachine({ modelClient: scriptedModel([{ content: "the fork is done" }]), tools: [pay], journal: store, configFile: false });
        const output = await runAgent(machine, {}, { snapshot: restoreAgent(machine, await store.load(forkId)), checkpoints: store });
        expect(output).toMatchObject({ runId: forkId, status: "succeeded", finalAnswer: "the fork is done" });
        expect(ledgerLines(ledger)).toHaveLength(1);
        return { output };
      } finally {
        await store.close?.();
      }
    };

    it("killed inside the tool: the fork does not run it again and tells the model its outcome is unknown", async () => {
      const { output } = await forkAndFinish("inside-tool");
      expect(output.messages.find((m) => m.role === "tool")?.content).toMatch(/may or may not have taken effect. It was not run again/);
    });

    it("killed right after the journal recorded the completion: the fork reuses the recorded outcome", async () => {
      const { output } = await forkAndFinish("after-journal");
      expect(output.messages.find((m) => m.role === "tool")?.content).toBe("paid INV-7");
      expect(output.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant"]);
      expect(output.messages[0]).toEqual(human("Pay invoice INV-7"));
    });
  });
}
