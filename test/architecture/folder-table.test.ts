import { execFileSync } from "node:child_process";
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "./library-source.js";

/**
 * docs/ARCHITECTURE.md's folder table matches the tree: every top-level folder of the repository and
 * every folder of the library (the top-level folders tsconfig.build.json builds, and each folder below
 * them that holds source) has a row saying its role in one line, and every row names a folder that
 * exists. A new folder gets its row, a removed one loses it. The tree is what git tracks, so build
 * output, dependencies and scratch folders (all ignored) are not part of it, nor are dot-folders
 * (configuration of the tools around the code).
 */

const PAGE = "docs/ARCHITECTURE.md";
/** A role is one line of the table: a sentence, not a section. */
const MAX_ROLE = 160;

/** The table's rows: folder (without backticks) → role. */
function folderTable(): Map<string, string> {
  const text = readFileSync(join(ROOT, PAGE), "utf8");
  const start = text.indexOf("| folder | role |");
  if (start < 0) throw new Error(`${PAGE} has no "| folder | role |" table`);
  const rows = new Map<string, string>();
  for (const line of text.slice(start).split("\n").slice(2)) {
    if (!line.startsWith("|")) break;
    const [, folder, role] = line.split("|").map((cell) => cell.trim());
    rows.set(folder!.replace(/^`|`$/g, ""), role!);
  }
  return rows;
}

const isDir = (path: string) => statSync(join(ROOT, path), { throwIfNoEntry: false })?.isDirectory() === true;

/** The folders the table must have: every top-level folder, and every folder of the library that holds source. */
function treeFolders(): string[] {
  const tracked = execFileSync("git", ["ls-files"], { cwd: ROOT, encoding: "utf8" }).split("\n").filter(Boolean);
  const build = JSON.parse(readFileSync(join(ROOT, "tsconfig.build.json"), "utf8")) as { include: string[] };
  const library = build.include.filter((entry) => isDir(entry)).map((entry) => `${entry}/`);
  const found = new Set<string>();
  for (const file of tracked) {
    const slash = file.indexOf("/");
    if (slash > 0 && !file.startsWith(".")) found.add(file.slice(0, slash + 1));
    const folder = file.slice(0, file.lastIndexOf("/") + 1);
    if (library.some((root) => folder.startsWith(root)) && /\.tsx?$/.test(file)) found.add(folder);
  }
  return [...found].sort();
}

describe(`${PAGE}'s folder table matches the tree`, () => {
  const table = folderTable();

  it("reads the table and the tree", () => {
    expect(table.size).toBeGreaterThan(20);
    const tree = treeFolders();
    expect(tree).toContain("machines/chart/");
    expect(tree).toContain("test/");
  });

  it("has a row for every folder", () => {
    const missing = treeFolders().filter((folder) => !table.has(folder));
    expect(missing, `add a row to the folder table in ${PAGE}`).toEqual([]);
  });

  it("names only folders that exist", () => {
    expect([...table.keys()].filter((folder) => !folder.endsWith("/") || !isDir(folder))).toEqual([]);
  });

  it("says each folder's role in one line", () => {
    const long = [...table].filter(([, role]) => role.length === 0 || role.length > MAX_ROLE).map(([folder, role]) => `${folder}: ${role.length} characters`);
    expect(long).toEqual([]);
  });
});
