#!/usr/bin/env node
import { ConfigError } from "../machines/config.js";
import { parseCli, UsageError, USAGE } from "./args.js";
import { runCommand } from "./run-command.js";

/** The `jianmu` command. Exit codes: 0 success, 1 the agent failed, 2 usage or configuration error. */
async function main(argv: string[]): Promise<number> {
  try {
    // The run queue's commands (worker, runs, approve, reject, cancel, run --store) live in queue-commands.ts.
    const queue = await import("./queue-commands.js");
    if (queue.isQueueCommand(argv)) return await queue.queueCommand(argv, { out: process.stdout, err: process.stderr, cwd: process.cwd() });
    const args = parseCli(argv);
    if (args.command === "help") {
      process.stdout.write(`${USAGE}\n`);
      return 0;
    }
    if (args.command === "view") {
      const { viewCommand } = await import("./view-command.js");
      return await viewCommand(args, { out: process.stdout, err: process.stderr, cwd: process.cwd() });
    }
    return await runCommand(args, { out: process.stdout, err: process.stderr, input: process.stdin, env: process.env, cwd: process.cwd() });
  } catch (error) {
    if (error instanceof UsageError || error instanceof ConfigError) {
      process.stderr.write(`jianmu: ${error.message}\n`);
      return 2;
    }
    process.stderr.write(`jianmu: unexpected error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    return 3;
  }
}

main(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
