/**
 * `read_file`: read a text file inside a sandbox directory, whole or as a byte window.
 *
 * Limits, so that one call cannot flood the context window: at most `maxBytes` per call. A larger
 * file is refused with the way out in the message (offset/length); a window that stops before the
 * end reports `nextOffset`. Files with NUL bytes are reported as binary instead of being dumped.
 */
import { constants as fsConstants, promises as fs, type Stats } from "node:fs";
import { z } from "zod";
import { defineTool, type Tool } from "../tool.js";
import { checkSandboxRoot, explainFsError, resolveInSandbox, SandboxError } from "./sandbox.js";

export const DEFAULT_MAX_BYTES = 64 * 1024;

export interface ReadFileOptions {
  /** The sandbox: every path is relative to it and must stay inside it. */
  root: string;
  /** Most bytes returned by one call; defaults to 64 KiB. */
  maxBytes?: number;
}

export interface ReadFileResult {
  /** Relative to the root, "/"-separated. */
  path: string;
  /** Size of the whole file in bytes. */
  size: number;
  /** Byte offset of the first byte returned. */
  offset: number;
  /** Bytes returned. */
  length: number;
  binary: boolean;
  /** The text (UTF-8), or null for a binary file. */
  content: string | null;
  /** Present when bytes remain after this window: pass it as `offset` to read on. */
  nextOffset?: number;
  note?: string;
}

// O_NOFOLLOW: the path was resolved already; if it became a symlink since, refuse rather than follow.
// O_NONBLOCK: opening a FIFO must not hang the agent; it is then rejected as not a regular file.
// (Both are undefined on Windows, where 0 leaves the flags as they are.)
const OPEN_FLAGS = fsConstants.O_RDONLY | (fsConstants.O_NOFOLLOW ?? 0) | (fsConstants.O_NONBLOCK ?? 0);

function kindOf(stats: Stats): string {
  if (stats.isFIFO()) return "a named pipe";
  if (stats.isSocket()) return "a socket";
  if (stats.isCharacterDevice() || stats.isBlockDevice()) return "a device";
  return "not a regular file";
}

function checkRegularFile(stats: Stats, shown: string): void {
  if (stats.isDirectory()) throw new SandboxError(`"${shown}" is a directory; use list_files to see what it contains`);
  if (!stats.isFile()) throw new SandboxError(`"${shown}" is ${kindOf(stats)}; read_file reads regular files only`);
}

/**
 * How many leading bytes form complete UTF-8 characters. A window cut mid-character would end
 * in a replacement character, and the next window would start with one; trimming keeps
 * `nextOffset` on a character boundary.
 */
export function completeUtf8Length(bytes: Uint8Array): number {
  let lead = bytes.length - 1;
  // Walk back over continuation bytes (10xxxxxx) to the byte that starts the last character.
  while (lead >= 0 && bytes.length - lead <= 4 && ((bytes[lead] ?? 0) & 0xc0) === 0x80) lead--;
  if (lead < 0) return bytes.length;
  const first = bytes[lead] ?? 0;
  const needed = first >= 0xf0 ? 4 : first >= 0xe0 ? 3 : first >= 0xc0 ? 2 : 1;
  return bytes.length - lead < needed ? lead : bytes.length;
}

async function readWindow(
  handle: fs.FileHandle,
  position: number,
  count: number,
  signal: AbortSignal,
): Promise<Uint8Array> {
  const buffer = Buffer.alloc(count);
  let filled = 0;
  // A read may return fewer bytes than asked; loop until the window is full or the file ends.
  while (filled < count) {
    signal.throwIfAborted();
    const { bytesRead } = await handle.read(buffer, filled, count - filled, position + filled);
    if (bytesRead === 0) break;
    filled += bytesRead;
  }
  return buffer.subarray(0, filled);
}

export function createReadFileTool(options: ReadFileOptions): Tool {
  const root = checkSandboxRoot(options.root);
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
  if (!Number.isInteger(maxBytes) || maxBytes <= 0) {
    throw new SandboxError(`read_file maxBytes must be a positive whole number of bytes, got ${String(maxBytes)}`);
  }

  return defineTool({
    name: "read_file",
    description:
      `Read a text file from the sandbox directory. Paths are relative to the sandbox root (use list_files to explore). ` +
      `Returns at most ${maxBytes} bytes per call; for larger files pass offset and length (in bytes) and continue from nextOffset.`,
    parameters: z.object({
      path: z.string().min(1).max(4096).describe('File path relative to the sandbox root, e.g. "notes/todo.txt"'),
      offset: z.number().int().min(0).optional().describe("Byte offset to start reading at (default 0)"),
      length: z.number().int().min(1).optional().describe(`Number of bytes to read (at most ${maxBytes})`),
    }),
    parallelSafe: true,
    effectTags: ["filesystem"],
    async execute(args, ctx): Promise<ReadFileResult> {
      const { realPath, shown } = await resolveInSandbox(root, args.path);
      let handle: fs.FileHandle;
      try {
        // Checked before opening: opening a socket fails (ENXIO) and a device may have side effects.
        checkRegularFile(await fs.stat(realPath), shown);
        handle = await fs.open(realPath, OPEN_FLAGS);
      } catch (error) {
        throw explainFsError(error, args.path);
      }
      try {
        // And again on what was opened, in case the entry was replaced in between.
        const stats = await handle.stat();
        checkRegularFile(stats, shown);
        const size = stats.size;
        const tooBig = `file "${shown}" is ${size} bytes; read at most ${maxBytes} at a time with offset/length`;

        let offset = 0;
        let bytes: Uint8Array;
        if (args.offset === undefined && args.length === undefined) {
          if (size > maxBytes) throw new SandboxError(tooBig);
          bytes = await fs.readFile(handle, { signal: ctx.signal });
          // It grew between stat and read: the limit still holds.
          if (bytes.length > maxBytes) throw new SandboxError(tooBig.replace(`${size} bytes`, `${bytes.length} bytes`));
        } else {
          offset = args.offset ?? 0;
          if (args.length !== undefined && args.length > maxBytes) {
            throw new SandboxError(`length ${args.length} is over the limit of ${maxBytes} bytes per call; read in several windows`);
          }
          if (offset > size) throw new SandboxError(`offset ${offset} is past the end of "${shown}" (${size} bytes)`);
          bytes = await readWindow(handle, offset, Math.min(args.length ?? maxBytes, size - offset), ctx.signal);
          if (offset + bytes.length < size) {
            const complete = completeUtf8Length(bytes);
            // Only when something is left: a tiny window inside one character is returned as is.
            if (complete > 0) bytes = bytes.subarray(0, complete);
          }
        }

        const end = offset + bytes.length;
        const result: ReadFileResult = { path: shown, size: Math.max(size, end), offset, length: bytes.length, binary: false, content: null };
        if (end < size) result.nextOffset = end;
        if (bytes.includes(0)) {
          result.binary = true;
          result.note = "binary file (contains NUL bytes): content not shown";
        } else {
          result.content = new TextDecoder("utf-8").decode(bytes);
        }
        return result;
      } finally {
        await handle.close();
      }
    },
  });
}
