import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { UsageError } from "./args.js";

/**
 * A module the user names on the command line (a worker's `--agents`, the cases of `jianmu eval`),
 * imported from the current folder. One that cannot be loaded is a UsageError: `named` says how the
 * command line named it, `rerun` is the command again, for the hint a TypeScript module gets.
 */
export async function importUserModule(spec: string, cwd: string, how: { named: string; rerun: string }): Promise<Record<string, unknown>> {
  try {
    return (await import(pathToFileURL(resolve(cwd, spec)).href)) as Record<string, unknown>;
  } catch (error) {
    // Node 20 runs no TypeScript of its own: say how to give it a loader.
    const typescript = /\.[mc]?ts$/.test(spec) && (error as { code?: unknown }).code === "ERR_UNKNOWN_FILE_EXTENSION";
    const hint = typescript ? `; a TypeScript module needs a loader: node --import tsx node_modules/jianmu/dist/cli/main.js ${how.rerun}, or compile it to JavaScript` : "";
    throw new UsageError(`cannot load ${how.named}: ${error instanceof Error ? error.message.split("\n")[0] : String(error)}${hint}`);
  }
}
