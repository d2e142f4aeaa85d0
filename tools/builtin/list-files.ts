/**
 * `list_files`: what is in a directory of the sandbox, one level deep, so that the model can find
 * the paths it then passes to `read_file`. Symbolic links are listed as such and not followed
 * here; `read_file` decides whether their target is inside the sandbox.
 */
import { promises as fs, type Dirent } from "node:fs";
import path from "node:path";
import { z } from "zod";
import { defineTool, type Tool } from "../tool.js";
import { checkSandboxRoot, explainFsError, resolveInSandbox, SandboxError } from "./sandbox.js";

export const DEFAULT_MAX_ENTRIES = 1000;

export interface ListFilesOptions {
  root: string;
  /** Most entries returned; the rest are counted in `total`. Defaults to 1000. */
  maxEntries?: number;
}

export interface ListedEntry {
  name: string;
  type: "file" | "directory" | "symlink" | "other";
  /** Bytes, for regular files. */
  size?: number;
}

export interface ListFilesResult {
  /** The directory listed, relative to the root ("." for the root). */
  path: string;
  /** Sorted by name. */
  entries: ListedEntry[];
  /** Entries in the directory, including any left out. */
  total: number;
  truncated: boolean;
}

function typeOf(entry: Dirent): ListedEntry["type"] {
  if (entry.isFile()) return "file";
  if (entry.isDirectory()) return "directory";
  if (entry.isSymbolicLink()) return "symlink";
  return "other";
}

export function createListFilesTool(options: ListFilesOptions): Tool {
  const root = checkSandboxRoot(options.root);
  const maxEntries = options.maxEntries ?? DEFAULT_MAX_ENTRIES;
  if (!Number.isInteger(maxEntries) || maxEntries <= 0) {
    throw new SandboxError(`list_files maxEntries must be a positive whole number, got ${String(maxEntries)}`);
  }

  return defineTool({
    name: "list_files",
    description:
      "List the files and directories in a directory of the sandbox (one level, sorted by name, with sizes of files). " +
      "Paths are relative to the sandbox root; omit path for the root itself.",
    parameters: z.object({
      path: z.string().max(4096).optional().describe('Directory relative to the sandbox root, e.g. "docs" (default: the root)'),
    }),
    parallelSafe: true,
    effectTags: ["filesystem"],
    async execute(args, ctx): Promise<ListFilesResult> {
      const requested = args.path === undefined || args.path === "" ? "." : args.path;
      const { realPath, shown } = await resolveInSandbox(root, requested);
      let dirents: Dirent[];
      try {
        const stats = await fs.stat(realPath);
        if (!stats.isDirectory()) throw new SandboxError(`"${shown}" is a file, not a directory; use read_file to read it`);
        ctx.signal.throwIfAborted();
        dirents = await fs.readdir(realPath, { withFileTypes: true });
      } catch (error) {
        throw explainFsError(error, requested);
      }
      // Plain code-unit order: the same on every machine, whatever the locale.
      dirents.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      const shownEntries = dirents.slice(0, maxEntries);
      ctx.signal.throwIfAborted();
      const entries = await Promise.all(
        shownEntries.map(async (dirent): Promise<ListedEntry> => {
          const entry: ListedEntry = { name: dirent.name, type: typeOf(dirent) };
          if (entry.type === "file") {
            // lstat: the entry itself, never a link target. A file deleted meanwhile just has no size.
            const stats = await fs.lstat(path.join(realPath, dirent.name)).catch(() => undefined);
            if (stats !== undefined) entry.size = stats.size;
          }
          return entry;
        }),
      );
      return { path: shown, entries, total: dirents.length, truncated: dirents.length > maxEntries };
    },
  });
}
