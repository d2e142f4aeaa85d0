#!/usr/bin/env node
// Run after `tsc -p tsconfig.build.json`: replaces the JavaScript tsc wrote to dist/ (one file per
// source module, ~200) by a rolldown bundle of the same code. Why: a cold `import("jianmu")` spent
// most of its own time loading modules one by one (resolve, read, parse, link ~90 files), not running
// them (issue 19: ≤ 150 ms; bench/import.mjs measures it). tsc stays the compiler and writes the .d.ts
// files; rolldown only links its output into fewer files.
//
// One build with every entry point of package.json ("exports" and the "bin"), so a module that two
// entry points use lands once, in a shared chunk: JianmuError stays one class for `instanceof`, a
// WeakMap or a registry stays one object, whichever entry point an app imported first. Every package
// (dependencies, peers, node: built-ins) stays external. The code's dynamic import()s (openai's call
// path, the viewer, the optional-peer parts) stay separate chunks, still loaded on first use.
// Each chunk keeps a `// dist/<module>.js` comment above each module it holds:
// test/package/bundled-modules.ts reads them to tell which modules a loaded chunk holds.
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from "node:fs";
import { builtinModules } from "node:module";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "rolldown";

const ROOT = dirname(dirname(fileURLToPath(import.meta.url)));
const DIST = join(ROOT, "dist");
const OUT = join(ROOT, "dist.bundle");
const manifest = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"));

/** Entry name (its path in dist/ without .js) for each "exports" target and each "bin". */
function entries() {
  const targets = [];
  for (const value of Object.values(manifest.exports)) {
    const target = typeof value === "string" ? value : value.default;
    if (target.endsWith(".js")) targets.push(target);
  }
  targets.push(...Object.values(manifest.bin));
  return Object.fromEntries(targets.map((target) => {
    const name = target.replace(/^\.\//, "").replace(/^dist\//, "").replace(/\.js$/, "");
    return [name, join(DIST, `${name}.js`)];
  }));
}

const packages = [manifest.dependencies, manifest.peerDependencies, manifest.optionalDependencies].flatMap((deps) => Object.keys(deps ?? {}));
const builtins = new Set(builtinModules);
/** A package (or a path inside one) or a Node built-in: imported at run time, never bundled. */
function isExternal(id) {
  if (id.startsWith("node:") || builtins.has(id)) return true;
  return packages.some((name) => id === name || id.startsWith(`${name}/`));
}

function jsFiles(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return jsFiles(path);
    return /\.js(\.map)?$/.test(name) ? [path] : [];
  });
}

/** The modules `entry` (a file in dist/) imports statically, directly or not: what importing it runs. */
function staticClosure(ctx, entry) {
  const seen = new Set();
  const pending = [join(DIST, entry)];
  while (pending.length > 0) {
    const id = pending.pop();
    if (seen.has(id)) continue;
    const info = ctx.getModuleInfo(id);
    if (!info || info.isExternal) continue;
    seen.add(id);
    pending.push(...info.importedIds);
  }
  return seen;
}

/**
 * What `import "jianmu"` runs goes in two chunks: "common", the part jianmu/react (a browser entry
 * point: no node: built-ins) shares with it, and "core", the rest. Other modules are split as
 * rolldown does by default (a chunk per set of entry points using them).
 */
let groups;
function groupOf(id, ctx) {
  if (!groups) {
    const browser = staticClosure(ctx, manifest.exports["./react"].default.replace(/^\.\/dist\//, ""));
    groups = new Map([...staticClosure(ctx, manifest.exports["."].default.replace(/^\.\/dist\//, ""))].map((module) => [module, browser.has(module) ? "common" : "core"]));
  }
  return groups.get(id) ?? null;
}

rmSync(OUT, { recursive: true, force: true });
await build({
  input: entries(),
  cwd: ROOT, // each module's `// dist/<path>.js` comment in the output is relative to it
  platform: "node",
  external: isExternal,
  // Required by includeDependenciesRecursively: false below (rolldown would set it anyway): an entry
  // file may export more than its module; each entry still exports exactly its module's names here.
  preserveEntrySignatures: "allow-extension",
  logLevel: "warn",
  output: {
    dir: OUT,
    format: "esm",
    entryFileNames: "[name].js",
    chunkFileNames: "chunks/[name]-[hash].js",
    // What `import "jianmu"` loads goes in two chunks (the module count is the cost); the other
    // entry points share them and add their own parts. The groups hold only modules index.js
    // reaches, whose imports are in the groups too ("core" imports "common", never back), so they
    // need not pull in their dependencies to avoid import cycles between chunks.
    codeSplitting: { groups: [{ debugName: "index", name: groupOf, includeDependenciesRecursively: false }] },
  },
});

// tsc's per-module JavaScript goes; its .d.ts files stay beside the bundle.
for (const file of jsFiles(DIST)) rmSync(file);
for (const file of jsFiles(OUT)) {
  const to = join(DIST, relative(OUT, file));
  mkdirSync(dirname(to), { recursive: true });
  renameSync(file, to);
}
rmSync(OUT, { recursive: true, force: true });
