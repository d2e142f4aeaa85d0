import { JianmuError } from "./jianmu-error.js";
/**
 * The heavy, optional parts of jianmu (MCP, SQLite, the Stately inspector, ...) each live behind an
 * entry point of their own (`jianmu/mcp`, ...) whose package is an optional peer dependency: apps
 * that never use it never install it. An entry point loads its code through `loadOptionalPeer`, so
 * a missing package is one clear error naming the install command, not a resolution stack.
 */
export class OptionalPeerMissingError extends JianmuError {
  static override readonly errorCode = "OPTIONAL_PEER_MISSING_ERROR";
  override name = "OptionalPeerMissingError";
  constructor(
    /** The jianmu entry point that was imported, e.g. "jianmu/mcp". */
    readonly entry: string,
    /** The package it needs. */
    readonly packageName: string,
    /** The command that fixes it. */
    readonly install: string,
    options?: ErrorOptions,
  ) {
    super(`${entry} needs the optional package ${packageName}, which is not installed: run \`${install}\``, options);
  }
}

export interface OptionalPeer {
  /** e.g. "jianmu/mcp". */
  entry: string;
  /** The package(s) the code loaded by `load` imports; the first missing one is named. */
  packages: readonly string[];
}

/** True when `error` says that `name` (or a file inside it) could not be resolved. */
export function isMissing(error: unknown, name: string): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  if (code !== "ERR_MODULE_NOT_FOUND" && code !== "MODULE_NOT_FOUND") return false;
  return typeof message === "string" && (message.includes(`'${name}'`) || message.includes(`'${name}/`) || message.includes(`/node_modules/${name}/`));
}

/** Loads an entry point's implementation; a missing optional package becomes `OptionalPeerMissingError`. */
export async function loadOptionalPeer<T>(peer: OptionalPeer, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (error) {
    const missing = peer.packages.find((name) => isMissing(error, name));
    if (missing === undefined) throw error;
    throw new OptionalPeerMissingError(peer.entry, missing, `npm install ${missing}`, { cause: error });
  }
}
