#!/usr/bin/env node
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/*
 * `npm run bench:install`: what installing jianmu costs an app. Packs the tarball, installs it into
 * two fresh apps (npm, from the registry): jianmu alone (its required peers come along), and jianmu
 * with every optional peer. Reports installed size, package count and the cold import time of each
 * entry point (a fresh Node process per import, median of several), in bench/results/install.{md,json}.
 * Needs the compiled library (npm run build) and the network.
 */

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = dirname(HERE);
const manifest = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"));
const REPEATS = 7;

const optional = Object.entries(manifest.peerDependenciesMeta ?? {})
  .filter(([, meta]) => meta.optional)
  .map(([name]) => name);
const entries = Object.entries(manifest.exports)
  .filter(([, target]) => typeof target === "object")
  .map(([subpath]) => (subpath === "." ? manifest.name : `${manifest.name}/${subpath.slice(2)}`));

function sizeOf(dir) {
  let bytes = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) bytes += sizeOf(path);
    else if (entry.isFile()) bytes += statSync(path).size;
  }
  return bytes;
}

/** Installed packages: every folder holding a package.json directly under some node_modules. */
function packageCount(dir) {
  let count = 0;
  const walk = (modules) => {
    for (const entry of readdirSync(modules, { withFileTypes: true })) {
      if (!entry.isDirectory() || entry.name.startsWith(".")) continue;
      const dirs = entry.name.startsWith("@") ? readdirSync(join(modules, entry.name)).map((name) => join(modules, entry.name, name)) : [join(modules, entry.name)];
      for (const pkg of dirs) {
        count++;
        try {
          walk(join(pkg, "node_modules"));
        } catch {
          // no nested node_modules
        }
      }
    }
  };
  walk(join(dir, "node_modules"));
  return count;
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/** What an app loads anyway: the required peers. Import times are also given relative to it. */
const BASELINE = "(xstate + zod + openai)";
const importScript = (specifier) =>
  specifier === BASELINE
    ? `const t = performance.now(); await Promise.all([import("xstate"), import("zod"), import("openai")]); process.stdout.write(String(performance.now() - t));`
    : `const t = performance.now(); await import(${JSON.stringify(specifier)}); process.stdout.write(String(performance.now() - t));`;

/**
 * Milliseconds for the import in a fresh process (the process's own start excluded), the
 * specifiers interleaved repetition by repetition so a busy machine slows them all alike.
 */
function coldImports(app, specifiers) {
  const times = new Map(specifiers.map((specifier) => [specifier, []]));
  const errors = new Map();
  for (let i = 0; i < REPEATS; i++) {
    for (const specifier of specifiers) {
      if (errors.has(specifier)) continue;
      const result = spawnSync(process.execPath, ["--input-type=module", "-e", importScript(specifier)], { cwd: app, encoding: "utf8" });
      if (result.status !== 0) errors.set(specifier, (result.stderr.split("\n").find((line) => /^\w*Error: /.test(line)) ?? "failed").slice(0, 200));
      else times.get(specifier).push(Number(result.stdout));
    }
  }
  return Object.fromEntries(specifiers.map((specifier) => [specifier, errors.has(specifier) ? { error: errors.get(specifier) } : { ms: median(times.get(specifier)) }]));
}

function install(label, tarball, extra) {
  const app = mkdtempSync(join(tmpdir(), `jianmu-install-${label}-`));
  writeFileSync(join(app, "package.json"), JSON.stringify({ name: `install-${label}`, private: true, type: "module", dependencies: { jianmu: `file:${tarball}`, ...extra } }));
  // No install scripts: better-sqlite3's native build is not counted (it needs a prebuilt binary or a compiler).
  execFileSync("npm", ["install", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error"], { cwd: app, stdio: "inherit" });
  const imports = coldImports(app, [BASELINE, ...entries]);
  return { label, app, bytes: sizeOf(join(app, "node_modules")), packages: packageCount(app), imports };
}

const packDir = mkdtempSync(join(tmpdir(), "jianmu-install-pack-"));
const [packed] = JSON.parse(execFileSync("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", packDir], { cwd: ROOT, encoding: "utf8" }));
const tarball = join(packDir, packed.filename);

const lean = install("lean", tarball, {});
const full = install("full", tarball, Object.fromEntries(optional.map((name) => [name, manifest.devDependencies[name]])));

const mb = (bytes) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;
const cell = (result, base) =>
  result.ms !== undefined ? `${result.ms.toFixed(0)} ms${base.ms ? ` (${(result.ms / base.ms).toFixed(2)}×)` : ""}` : `fails: ${result.error}`;
const md = `# Installing jianmu

\`node bench/install.mjs\` (\`npm run bench:install\`), ${new Date().toISOString().slice(0, 10)}, Node ${process.versions.node}.
The packed tarball (${packed.entryCount} files, ${(packed.size / 1024).toFixed(0)} kB) installed from the registry into a
fresh app: alone (npm adds the required peers xstate, zod and openai), and with every optional peer
(${optional.join(", ")}). Install scripts are not run, so better-sqlite3's native build is not counted.

| app | installed size | packages |
| --- | ---: | ---: |
| \`npm install jianmu\` | ${mb(lean.bytes)} | ${lean.packages} |
| \`npm install jianmu ${optional.join(" ")}\` | ${mb(full.bytes)} | ${full.packages} |

Before the optional parts moved to entry points of their own, every install carried all of them:
about 147 packages and 92 MB, with better-sqlite3 compiled when no prebuilt binary could be fetched
(figures from issue 17).

Cold import, each in a fresh Node process (median of ${REPEATS}, interleaved; the process's own start
excluded), and in brackets relative to importing the required peers themselves, which any app using
jianmu loads anyway. Absolute times move with the machine's load; compare the ratios.

| import | app with only jianmu | app with every optional peer |
| --- | ---: | ---: |
${[BASELINE, ...entries].map((specifier) => `| ${specifier === BASELINE ? "the peers " + BASELINE : "`" + specifier + "`"} | ${cell(lean.imports[specifier], lean.imports[BASELINE])} | ${cell(full.imports[specifier], full.imports[BASELINE])} |`).join("\n")}

In the app without the optional peers, their entry points fail at once with the install command to run.
`;
writeFileSync(join(HERE, "results", "install.md"), md);
writeFileSync(
  join(HERE, "results", "install.json"),
  `${JSON.stringify({ date: new Date().toISOString(), node: process.versions.node, tarball: { files: packed.entryCount, bytes: packed.size }, lean: { ...lean, app: undefined }, full: { ...full, app: undefined } }, null, 2)}\n`,
);
console.log(md);
