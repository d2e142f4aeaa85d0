import { readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));

/** Every module `entry` loads at run time (type-only imports are erased), by repository path, and the packages it imports. */
function runtimeGraph(entry: string): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string) => {
    const path = relative(root, file);
    if (files.has(path)) return;
    files.add(path);
    const source = readFileSync(file, "utf8");
    const imports = [...source.matchAll(/^\s*(?:import|export)\s+(?!type\b)(?:[^"';]*?\s+from\s+)?["']([^"']+)["']/gm), ...source.matchAll(/import\(\s*["']([^"']+)["']\s*\)/g)];
    for (const [, spec] of imports) {
      if (spec!.startsWith(".")) visit(join(dirname(file), spec!.replace(/\.js$/, ".ts")));
      else packages.add(spec!.startsWith("@") ? spec!.split("/").slice(0, 2).join("/") : spec!.split("/")[0]!);
    }
  };
  visit(join(root, entry));
  return { files, packages };
}

describe("entry points", () => {
  it('import "jianmu" loads neither the run queue nor pg', () => {
    const { files, packages } = runtimeGraph("index.ts");
    expect([...files].filter((f) => f.startsWith("queue/") || f === "postgres.ts")).toEqual([]);
    expect(packages.has("pg")).toBe(false);
  });

  it("jianmu/postgres loads pg; jianmu/sqlite does not", () => {
    expect(runtimeGraph("postgres.ts").packages.has("pg")).toBe(true);
    const sqlite = runtimeGraph("sqlite.ts");
    expect(sqlite.packages.has("pg")).toBe(false);
    expect(sqlite.packages.has("better-sqlite3")).toBe(true);
  });
});
