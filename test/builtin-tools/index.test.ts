import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { BUILTIN_TOOL_NAMES, builtinTools, calculatorTool, currentTimeTool } from "../../tools/builtin/index.js";
import { explainFsError, SandboxError } from "../../tools/builtin/sandbox.js";

const root = mkdtempSync(path.join(os.tmpdir(), "jianmu-builtin-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("builtinTools", () => {
  it("gives calculator and current_time without a root", () => {
    const tools = builtinTools();
    expect(tools.map((tool) => tool.name)).toEqual(["calculator", "current_time"]);
    expect(tools[0]).toBe(calculatorTool);
    expect(tools[1]).toBe(currentTimeTool);
  });

  it("adds the sandboxed file tools when a root is given, in BUILTIN_TOOL_NAMES order", () => {
    const tools = builtinTools({ root });
    expect(tools.map((tool) => tool.name)).toEqual([...BUILTIN_TOOL_NAMES]);
    expect(tools.map((tool) => tool.effectTags)).toEqual([[], [], ["filesystem"], ["filesystem"]]);
    expect(tools.every((tool) => tool.parallelSafe)).toBe(true);
  });

  it("passes maxBytes on to read_file", () => {
    const readFile = builtinTools({ root, maxBytes: 1234 }).find((tool) => tool.name === "read_file");
    expect(readFile?.description).toContain("at most 1234 bytes per call");
  });

  it("fails at construction for a root that does not exist", () => {
    expect(() => builtinTools({ root: path.join(root, "missing") })).toThrow(SandboxError);
  });
});

describe("explainFsError", () => {
  it("rewords file-system errors without the absolute path Node puts in them", () => {
    const raw = Object.assign(new Error("EIO: i/o error, open '/home/someone/data/x.txt'"), { code: "EIO" });
    const explained = explainFsError(raw, "x.txt");
    expect(explained).toBeInstanceOf(SandboxError);
    expect((explained as Error).message).toBe('cannot access "x.txt" (EIO)');
  });

  it("passes other errors, and cancellations, through unchanged", () => {
    const plain = new Error("boom");
    const abort = Object.assign(new Error("The operation was aborted"), { code: "ABORT_ERR", name: "AbortError" });
    expect(explainFsError(plain, "x")).toBe(plain);
    expect(explainFsError(abort, "x")).toBe(abort);
  });
});
