/**
 * Path resolution for the file tools. A path the model gives is only ever used after it has been
 * resolved, with every symbolic link followed, to a location inside the sandbox root.
 *
 * Two checks, because each catches what the other cannot:
 *   1. lexical: `../x` (or `a/../../x`) must not climb out of the root, even when the target does
 *      not exist (so the error says "outside", not "not found");
 *   2. real: `fs.realpath` of the target must lie under `fs.realpath` of the root, which catches
 *      symbolic links inside the sandbox that point outside it (`link -> /etc/passwd`).
 */
import { promises as fs, statSync } from "node:fs";
import path from "node:path";
import { JianmuError } from "../jianmu-error.js";

/** A file tool call the sandbox refused, or a file-system failure explained for the model. */
export class SandboxError extends JianmuError {
  static override readonly errorCode = "SANDBOX_ERROR";
  override name = "SandboxError";
}

export interface SandboxPath {
  /** Absolute, symlink-free path inside the root. */
  realPath: string;
  /** Relative to the root with "/" separators ("." for the root itself), for messages and results. */
  shown: string;
}

/** Check at construction time that `root` is a directory, so a bad configuration fails at startup. */
export function checkSandboxRoot(root: string): string {
  const absolute = path.resolve(root);
  let isDirectory = false;
  try {
    isDirectory = statSync(absolute).isDirectory();
  } catch {
    // Reported below: a missing root and a file root get the same fix.
  }
  if (!isDirectory) throw new SandboxError(`sandbox root "${root}" is not an existing directory`);
  return absolute;
}

/**
 * Is `candidate` the root or below it? The separator matters: without it, "/srv/data-private"
 * would count as inside "/srv/data".
 */
export function isInside(root: string, candidate: string): boolean {
  if (candidate === root) return true;
  const prefix = root.endsWith(path.sep) ? root : root + path.sep;
  return candidate.startsWith(prefix);
}

function errorCode(error: unknown): string | undefined {
  return error instanceof Error && "code" in error && typeof error.code === "string" ? error.code : undefined;
}

/**
 * Turn a Node file-system error into a sentence about the model's path. Node's own messages
 * name the absolute path, which says more about the host than the model needs; errors without
 * an fs code (ours, an AbortError) pass through unchanged.
 */
export function explainFsError(error: unknown, shown: string): unknown {
  const code = errorCode(error);
  switch (code) {
    case undefined:
    case "ABORT_ERR": // a cancelled read stays a cancellation
      return error;
    case "ENOENT":
    case "ENOTDIR":
      return new SandboxError(`no such file or directory: "${shown}" (list_files shows what exists)`);
    case "EACCES":
    case "EPERM":
      return new SandboxError(`permission denied: "${shown}"`);
    case "ELOOP":
      return new SandboxError(`"${shown}" is a symbolic link that cannot be followed (a loop, or it changed while being read)`);
    default:
      return new SandboxError(`cannot access "${shown}" (${code})`);
  }
}

export async function resolveInSandbox(root: string, requested: string): Promise<SandboxPath> {
  if (requested.includes("\0")) throw new SandboxError("path contains a NUL character");
  if (path.isAbsolute(requested)) {
    throw new SandboxError(
      `absolute paths are not allowed: "${requested}"; give a path relative to the sandbox root, e.g. "notes/todo.txt"`,
    );
  }
  const realRoot = await fs.realpath(root);
  const lexical = path.resolve(realRoot, requested);
  if (!isInside(realRoot, lexical)) {
    throw new SandboxError(`path "${requested}" leads outside the sandbox root; paths must stay inside it`);
  }
  let realPath: string;
  try {
    realPath = await fs.realpath(lexical);
  } catch (error) {
    throw explainFsError(error, requested);
  }
  if (!isInside(realRoot, realPath)) {
    // The target is not named: what lies outside the sandbox is none of the model's business.
    throw new SandboxError(`path "${requested}" is a symbolic link to a location outside the sandbox root; only files inside it are readable`);
  }
  const shown = path.relative(realRoot, realPath).split(path.sep).join("/") || ".";
  return { realPath, shown };
}
