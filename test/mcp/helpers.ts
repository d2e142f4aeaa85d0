import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { mcpToolProvider } from "../../tools/mcp/mcp-provider.js";
import type { McpProviderOptions } from "../../tools/mcp/options.js";

const require = createRequire(import.meta.url);
const here = dirname(fileURLToPath(import.meta.url));

/** Resolve a package's file without relying on its `exports` map (the servers export nothing). */
function packageFile(pkg: string, file: string): string {
  return join(dirname(require.resolve(`${pkg}/package.json`)), file);
}

export const EVERYTHING_SERVER = packageFile("@modelcontextprotocol/server-everything", "dist/index.js");
export const MEMORY_SERVER = packageFile("@modelcontextprotocol/server-memory", "dist/index.js");
export const FIXTURE_SERVER = join(here, "fixture-server.mjs");

type Extra = Partial<Omit<McpProviderOptions, "transport">> & { env?: Record<string, string> };

/** server-everything over stdio, run with this very node binary. */
export function everything(extra: Extra = {}) {
  const { env, ...rest } = extra;
  return mcpToolProvider({
    name: "everything",
    transport: { type: "stdio", command: process.execPath, args: [EVERYTHING_SERVER, "stdio"], ...(env ? { env } : {}) },
    ...rest,
  });
}

/** server-memory with its knowledge graph in the given file. */
export function memory(memoryFile: string, extra: Extra = {}) {
  const { env, ...rest } = extra;
  return mcpToolProvider({
    name: "memory",
    transport: { type: "stdio", command: process.execPath, args: [MEMORY_SERVER], env: { MEMORY_FILE_PATH: memoryFile, ...env } },
    ...rest,
  });
}

/** The local fixture server (see fixture-server.mjs for what the env variables do). */
export function fixture(extra: Extra = {}) {
  const { env, ...rest } = extra;
  return mcpToolProvider({
    name: "fixture",
    transport: { type: "stdio", command: process.execPath, args: [FIXTURE_SERVER], ...(env ? { env } : {}) },
    ...rest,
  });
}

/** True while the process exists: `process.kill(pid, 0)` throws ESRCH once it is gone. */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ESRCH") return false;
    throw error;
  }
}

/** A fresh temporary directory and a function that removes it. */
export function tempDir(prefix: string): { dir: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
