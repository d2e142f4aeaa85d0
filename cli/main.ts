#!/usr/bin/env node
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ConfigError } from "../machines/contract/config.js";
import { HELP, parseCli, UsageError, USAGE } from "./args.js";
import { Interrupts, SIGINT, SIGTERM, STDOUT_CLOSED } from "./interrupts.js";
import { packageRoot } from "./package-root.js";
import { OptionalPeerMissingError } from "../tools/optional-peer.js";

/**
 * The `jianmu` command. Exit codes: 0 success, 1 the agent failed, 2 usage or configuration error,
 * 130/143 interrupted by SIGINT (or Ctrl-C/Ctrl-D at a prompt) / SIGTERM. It never shows a stack
 * unless JIANMU_DEBUG is set.
 */
async function main(argv: string[], interrupts: Interrupts): Promise<number> {
  const terminal = { out: process.stdout, err: process.stderr, env: process.env };
  try {
    // The run queue's commands (worker, runs, approve, reject, cancel, run --store) live in queue-commands.ts.
    const queue = await import("./queue-commands.js");
    if (queue.isQueueCommand(argv)) return await queue.queueCommand(argv, { ...terminal, input: process.stdin, cwd: process.cwd(), interrupts });
    const args = parseCli(argv);
    if (args.command === "version") {
      const manifest = JSON.parse(readFileSync(join(packageRoot(), "package.json"), "utf8")) as { version: string };
      process.stdout.write(`${manifest.version}\n`);
      return 0;
    }
    if (args.command === "help") {
      process.stdout.write(`${args.topic !== undefined ? HELP[args.topic] : USAGE}\n`);
      return 0;
    }
    if (args.command === "eval") {
      const { evalCommand } = await import("./eval-command.js");
      return await evalCommand(args, { ...terminal, cwd: process.cwd(), interrupts });
    }
    if (args.command === "view") {
      const { viewCommand } = await import("./view-command.js");
      return await viewCommand(args, { ...terminal, cwd: process.cwd() });
    }
    if (args.command === "serve") {
      const { serveCommand } = await import("./serve-command.js");
      // The server has nothing to cancel: the first signal stops it.
      const stop = interrupts.on(() => {});
      try {
        return await serveCommand(args, terminal, interrupts.first);
      } finally {
        stop();
      }
    }
    const { runCommand } = await import("./run-command.js");
    return await runCommand(args, { ...terminal, input: process.stdin, cwd: process.cwd(), interrupts });
  } catch (error) {
    // A missing optional package is the setup's problem, found before any model call: one line naming the install.
    if (error instanceof UsageError || error instanceof ConfigError || error instanceof OptionalPeerMissingError) {
      process.stderr.write(`jianmu: ${error.message}\n`);
      return 2;
    }
    const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    const detail = process.env["JIANMU_DEBUG"] && error instanceof Error ? `\n${error.stack}` : "";
    process.stderr.write(`jianmu: unexpected error: ${message.split("\n")[0]} (set JIANMU_DEBUG=1 for the stack, and please report it)${detail}\n`);
    return 3;
  }
}

const interrupts = new Interrupts((code) => process.exit(code));
process.on("SIGINT", () => interrupts.trigger(SIGINT));
process.on("SIGTERM", () => interrupts.trigger(SIGTERM));
// `jianmu run | head -1`: the reader has gone; stop quietly instead of dying on EPIPE.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code === "EPIPE") interrupts.trigger(STDOUT_CLOSED);
  else throw error;
});

main(process.argv.slice(2), interrupts).then((code) => {
  process.exitCode = code;
});
