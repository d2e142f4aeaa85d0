// The manifest npm publishes carries none of the checkout's scripts (build, demo, bench, ...): they
// name files the package does not ship, and an app that installs jianmu has no use for them.
// `npm pack` / `npm publish` run `strip` before packing (prepack) and `restore` after (postpack);
// npm reads package.json again after prepack, so the tarball gets the stripped one.
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** package.json as published: the checkout's, without its scripts. */
function publishedManifest(manifest) {
  const { scripts: _scripts, ...published } = manifest;
  return published;
}

const ROOT = join(fileURLToPath(new URL(".", import.meta.url)), "..");
const MANIFEST = join(ROOT, "package.json");
const KEPT = join(ROOT, "package.json.prepack");

function strip() {
  if (existsSync(KEPT)) {
    throw new Error(`${KEPT} is there: an earlier pack did not finish; run \`node scripts/pack-manifest.mjs restore\` first`);
  }
  const text = readFileSync(MANIFEST, "utf8");
  writeFileSync(KEPT, text, { flag: "wx" });
  writeFileSync(MANIFEST, `${JSON.stringify(publishedManifest(JSON.parse(text)), null, 2)}\n`);
}

function restore() {
  if (existsSync(KEPT)) renameSync(KEPT, MANIFEST);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const command = process.argv[2];
  if (command === "strip") strip();
  else if (command === "restore") restore();
  else {
    console.error("usage: node scripts/pack-manifest.mjs strip|restore");
    process.exit(2);
  }
}
