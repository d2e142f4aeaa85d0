import { promises as fs } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Tool, ToolContext } from "../../tools/tool.js";
import { createListFilesTool, type ListFilesResult } from "../../tools/builtin/list-files.js";
import { createReadFileTool, completeUtf8Length, type ReadFileResult } from "../../tools/builtin/read-file.js";
import { isInside, SandboxError } from "../../tools/builtin/sandbox.js";

const ctx: ToolContext = { signal: new AbortController().signal, callId: "c1", state: {} };

async function call(tool: Tool, args: unknown, context: ToolContext = ctx): Promise<unknown> {
  const check = tool.validate(args);
  if (!check.ok) throw new Error(`validation failed: ${check.error}`);
  return await tool.execute(check.value, context);
}

const BIG_SIZE = 200_000;
// Deterministic, position-revealing content: byte i is the letter (i mod 26).
const bigContent = Array.from({ length: BIG_SIZE }, (_, i) => String.fromCharCode(97 + (i % 26))).join("");
// 1 + 2 + 3 + 4 bytes: a one-, two-, three- and four-byte UTF-8 character.
const MIXED = "aé€😀";

let base: string; // holds the sandbox and things outside it
let root: string;
let server: net.Server | undefined;

beforeAll(async () => {
  base = await fs.mkdtemp(path.join(os.tmpdir(), "jianmu-file-tools-"));
  root = path.join(base, "data");
  await fs.mkdir(path.join(root, "sub"), { recursive: true });
  await fs.writeFile(path.join(root, "notes.txt"), "hello\nworld\n");
  await fs.writeFile(path.join(root, "sub", "inner.txt"), "inner");
  await fs.writeFile(path.join(root, "big.txt"), bigContent);
  await fs.writeFile(path.join(root, "image.bin"), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x01, 0x02]));
  await fs.writeFile(path.join(root, "mixed.txt"), MIXED);
  await fs.writeFile(path.join(root, "empty.txt"), "");
  // Outside the sandbox: a secret next to it, and a sibling whose name starts with the root's.
  await fs.writeFile(path.join(base, "secret.txt"), "top secret");
  await fs.mkdir(path.join(base, "data-private"));
  await fs.writeFile(path.join(base, "data-private", "key.txt"), "private key");
  await fs.symlink("/etc/passwd", path.join(root, "passwd-link"));
  await fs.symlink(path.join(base, "secret.txt"), path.join(root, "secret-link"));
  await fs.symlink("../data-private", path.join(root, "sibling-link"));
  await fs.symlink("notes.txt", path.join(root, "notes-link"));
  await fs.symlink(base, path.join(base, "root-alias"));
  // A socket is a file-system entry that is neither a file nor a directory (and needs no mkfifo).
  const socketPath = path.join(root, "service.sock");
  server = net.createServer();
  await new Promise<void>((resolve, reject) => {
    server?.once("error", reject);
    server?.listen(socketPath, resolve);
  });
});

afterAll(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  await fs.rm(base, { recursive: true, force: true });
});

describe("read_file: reading", () => {
  it("reads a small file whole", async () => {
    const tool = createReadFileTool({ root });
    expect(await call(tool, { path: "notes.txt" })).toEqual({
      path: "notes.txt",
      size: 12,
      offset: 0,
      length: 12,
      binary: false,
      content: "hello\nworld\n",
    });
  });

  it("reads nested paths and reports them normalized", async () => {
    const tool = createReadFileTool({ root });
    expect(await call(tool, { path: "sub/inner.txt" })).toMatchObject({ path: "sub/inner.txt", content: "inner" });
    expect(await call(tool, { path: "./sub/../notes.txt" })).toMatchObject({ path: "notes.txt", size: 12 });
  });

  it("follows a symbolic link that stays inside the sandbox", async () => {
    const tool = createReadFileTool({ root });
    expect(await call(tool, { path: "notes-link" })).toMatchObject({ path: "notes.txt", content: "hello\nworld\n" });
  });

  it("works when the root itself is reached through a symbolic link", async () => {
    const tool = createReadFileTool({ root: path.join(base, "root-alias", "data") });
    expect(await call(tool, { path: "sub/inner.txt" })).toMatchObject({ path: "sub/inner.txt", content: "inner" });
  });

  it("reads an empty file", async () => {
    expect(await call(createReadFileTool({ root }), { path: "empty.txt" })).toEqual({
      path: "empty.txt",
      size: 0,
      offset: 0,
      length: 0,
      binary: false,
      content: "",
    });
  });
});

describe("read_file: sandbox", () => {
  const tool = () => createReadFileTool({ root });

  it.each(["../secret.txt", "sub/../../secret.txt", "..", "../data-private/key.txt"])("refuses %s as outside the root", async (p) => {
    await expect(call(tool(), { path: p })).rejects.toThrow(`path "${p}" leads outside the sandbox root; paths must stay inside it`);
  });

  it("refuses absolute paths, even ones inside the root", async () => {
    await expect(call(tool(), { path: "/etc/passwd" })).rejects.toThrow(
      'absolute paths are not allowed: "/etc/passwd"; give a path relative to the sandbox root, e.g. "notes/todo.txt"',
    );
    await expect(call(tool(), { path: path.join(root, "notes.txt") })).rejects.toThrow("absolute paths are not allowed");
  });

  it.each(["passwd-link", "secret-link", "sibling-link/key.txt"])("refuses %s, a symbolic link out of the sandbox", async (p) => {
    const attempt = call(tool(), { path: p });
    await expect(attempt).rejects.toThrow(`path "${p}" is a symbolic link to a location outside the sandbox root; only files inside it are readable`);
    await expect(attempt).rejects.toBeInstanceOf(SandboxError);
  });

  it("does not name the outside target in the error", async () => {
    const error: unknown = await call(tool(), { path: "passwd-link" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SandboxError);
    expect((error as Error).message).not.toContain("/etc");
  });

  it("refuses a NUL byte in the path", async () => {
    await expect(call(tool(), { path: "notes.txt\0.png" })).rejects.toThrow("path contains a NUL character");
  });

  it("compares paths by whole segments, so data-private is not inside data", () => {
    expect(isInside("/srv/data", "/srv/data-private/key.txt")).toBe(false);
    expect(isInside("/srv/data", "/srv/data/key.txt")).toBe(true);
    expect(isInside("/srv/data", "/srv/data")).toBe(true);
    expect(isInside("/", "/etc/passwd")).toBe(true);
  });
});

describe("read_file: what is not a readable file", () => {
  const tool = () => createReadFileTool({ root });

  it("points from a directory to list_files", async () => {
    await expect(call(tool(), { path: "sub" })).rejects.toThrow('"sub" is a directory; use list_files to see what it contains');
  });

  it("refuses a socket as not a regular file", async () => {
    await expect(call(tool(), { path: "service.sock" })).rejects.toThrow('"service.sock" is a socket; read_file reads regular files only');
  });

  it("says when a file does not exist", async () => {
    await expect(call(tool(), { path: "nope.txt" })).rejects.toThrow('no such file or directory: "nope.txt" (list_files shows what exists)');
    await expect(call(tool(), { path: "notes.txt/x" })).rejects.toThrow('no such file or directory: "notes.txt/x"');
  });

  it("reports a binary file instead of dumping it", async () => {
    expect(await call(tool(), { path: "image.bin" })).toEqual({
      path: "image.bin",
      size: 7,
      offset: 0,
      length: 7,
      binary: true,
      content: null,
      note: "binary file (contains NUL bytes): content not shown",
    });
  });
});

describe("read_file: size limit and windows", () => {
  const tool = () => createReadFileTool({ root });

  it("refuses a file over the limit and says how to read it", async () => {
    await expect(call(tool(), { path: "big.txt" })).rejects.toThrow(
      'file "big.txt" is 200000 bytes; read at most 65536 at a time with offset/length',
    );
  });

  it("reads a window within the limit and says where to continue", async () => {
    const first = (await call(tool(), { path: "big.txt", offset: 0, length: 65_536 })) as ReadFileResult;
    expect({ ...first, content: first.content?.length }).toEqual({
      path: "big.txt",
      size: BIG_SIZE,
      offset: 0,
      length: 65_536,
      binary: false,
      content: 65_536,
      nextOffset: 65_536,
    });
    expect(first.content).toBe(bigContent.slice(0, 65_536));
  });

  it("reads from an offset up to the limit when no length is given", async () => {
    const middle = (await call(tool(), { path: "big.txt", offset: 100_000 })) as ReadFileResult;
    expect(middle.length).toBe(65_536);
    expect(middle.nextOffset).toBe(165_536);
    expect(middle.content).toBe(bigContent.slice(100_000, 165_536));
  });

  it("stops at the end of the file, with no nextOffset", async () => {
    const last = (await call(tool(), { path: "big.txt", offset: 196_000, length: 10_000 })) as ReadFileResult;
    expect(last).toMatchObject({ offset: 196_000, length: 4_000, content: bigContent.slice(196_000) });
    expect(last).not.toHaveProperty("nextOffset");
  });

  it("reads a window of a small file starting at 0 when only length is given", async () => {
    expect(await call(tool(), { path: "notes.txt", length: 5 })).toEqual({
      path: "notes.txt",
      size: 12,
      offset: 0,
      length: 5,
      binary: false,
      content: "hello",
      nextOffset: 5,
    });
  });

  it("refuses a window longer than the limit", async () => {
    await expect(call(tool(), { path: "big.txt", offset: 0, length: 100_000 })).rejects.toThrow(
      "length 100000 is over the limit of 65536 bytes per call; read in several windows",
    );
  });

  it("refuses an offset past the end, and returns nothing at the very end", async () => {
    await expect(call(tool(), { path: "notes.txt", offset: 13 })).rejects.toThrow('offset 13 is past the end of "notes.txt" (12 bytes)');
    expect(await call(tool(), { path: "notes.txt", offset: 12 })).toMatchObject({ length: 0, content: "" });
  });

  it("honours a smaller maxBytes", async () => {
    const small = createReadFileTool({ root, maxBytes: 10 });
    await expect(call(small, { path: "notes.txt" })).rejects.toThrow('file "notes.txt" is 12 bytes; read at most 10 at a time with offset/length');
    expect(small.description).toContain("at most 10 bytes per call");
  });

  it("ends a window on a UTF-8 character boundary so nextOffset starts a character", async () => {
    const first = (await call(tool(), { path: "mixed.txt", offset: 0, length: 4 })) as ReadFileResult;
    expect(first).toMatchObject({ content: "aé", length: 3, nextOffset: 3 });
    const second = (await call(tool(), { path: "mixed.txt", offset: 3, length: 5 })) as ReadFileResult;
    expect(second).toMatchObject({ content: "€", length: 3, nextOffset: 6 });
    const third = (await call(tool(), { path: "mixed.txt", offset: 6 })) as ReadFileResult;
    expect(third).toMatchObject({ content: "😀", length: 4 });
    expect(third).not.toHaveProperty("nextOffset");
  });

  it("finds the complete prefix of UTF-8 bytes", () => {
    const bytes = new TextEncoder().encode(MIXED);
    expect([1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((n) => completeUtf8Length(bytes.subarray(0, n)))).toEqual([1, 1, 3, 3, 3, 6, 6, 6, 6, 10]);
  });
});

describe("read_file: arguments, configuration, cancellation", () => {
  it("rejects bad arguments at validation", () => {
    const tool = createReadFileTool({ root });
    expect(tool.validate({ path: "" })).toMatchObject({ ok: false });
    expect(tool.validate({ path: "notes.txt", offset: -1 })).toMatchObject({ ok: false, error: expect.stringContaining("offset") });
    expect(tool.validate({ path: "notes.txt", length: 0 })).toMatchObject({ ok: false, error: expect.stringContaining("length") });
    expect(tool.validate({ path: "notes.txt", offset: 1.5 })).toMatchObject({ ok: false });
  });

  it("refuses a root that is not an existing directory, and a bad maxBytes", () => {
    expect(() => createReadFileTool({ root: path.join(base, "missing") })).toThrow(/^sandbox root ".*missing" is not an existing directory$/);
    expect(() => createReadFileTool({ root: path.join(root, "notes.txt") })).toThrow("is not an existing directory");
    expect(() => createReadFileTool({ root, maxBytes: 0 })).toThrow("read_file maxBytes must be a positive whole number of bytes, got 0");
  });

  it("stops when the signal is aborted", async () => {
    const controller = new AbortController();
    controller.abort();
    const aborted: ToolContext = { ...ctx, signal: controller.signal };
    const tool = createReadFileTool({ root });
    await expect(call(tool, { path: "notes.txt" }, aborted)).rejects.toMatchObject({ name: "AbortError" });
    await expect(call(tool, { path: "big.txt", offset: 0, length: 10 }, aborted)).rejects.toMatchObject({ name: "AbortError" });
  });

  it("is declared as a parallel-safe file-system tool", () => {
    const tool = createReadFileTool({ root });
    expect(tool.name).toBe("read_file");
    expect(tool.parallelSafe).toBe(true);
    expect(tool.effectTags).toEqual(["filesystem"]);
  });
});

describe("list_files", () => {
  const tool = () => createListFilesTool({ root });

  it("lists the root sorted by name, with types and file sizes", async () => {
    expect(await call(tool(), {})).toEqual({
      path: ".",
      entries: [
        { name: "big.txt", type: "file", size: BIG_SIZE },
        { name: "empty.txt", type: "file", size: 0 },
        { name: "image.bin", type: "file", size: 7 },
        { name: "mixed.txt", type: "file", size: 10 },
        { name: "notes-link", type: "symlink" },
        { name: "notes.txt", type: "file", size: 12 },
        { name: "passwd-link", type: "symlink" },
        { name: "secret-link", type: "symlink" },
        { name: "service.sock", type: "other" },
        { name: "sibling-link", type: "symlink" },
        { name: "sub", type: "directory" },
      ],
      total: 11,
      truncated: false,
    } satisfies ListFilesResult);
  });

  it("lists a subdirectory", async () => {
    expect(await call(tool(), { path: "sub" })).toEqual({
      path: "sub",
      entries: [{ name: "inner.txt", type: "file", size: 5 }],
      total: 1,
      truncated: false,
    });
    expect(await call(tool(), { path: "sub/" })).toMatchObject({ path: "sub", total: 1 });
  });

  it("cuts long listings at maxEntries and says so", async () => {
    const short = createListFilesTool({ root, maxEntries: 2 });
    const result = (await call(short, { path: "." })) as ListFilesResult;
    expect(result.entries.map((entry) => entry.name)).toEqual(["big.txt", "empty.txt"]);
    expect(result).toMatchObject({ total: 11, truncated: true });
  });

  it("applies the same sandbox as read_file", async () => {
    await expect(call(tool(), { path: ".." })).rejects.toThrow('path ".." leads outside the sandbox root');
    await expect(call(tool(), { path: "/etc" })).rejects.toThrow('absolute paths are not allowed: "/etc"');
    await expect(call(tool(), { path: "sibling-link" })).rejects.toThrow(
      'path "sibling-link" is a symbolic link to a location outside the sandbox root',
    );
  });

  it("points from a file to read_file, and says when a directory does not exist", async () => {
    await expect(call(tool(), { path: "notes.txt" })).rejects.toThrow('"notes.txt" is a file, not a directory; use read_file to read it');
    await expect(call(tool(), { path: "nowhere" })).rejects.toThrow('no such file or directory: "nowhere"');
  });

  it("is declared as a parallel-safe file-system tool", () => {
    expect(tool().name).toBe("list_files");
    expect(tool().parallelSafe).toBe(true);
    expect(tool().effectTags).toEqual(["filesystem"]);
  });
});
