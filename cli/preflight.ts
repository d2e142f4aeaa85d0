import { accessSync, constants, statSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { UsageError } from "./args.js";

/**
 * File problems found before the run starts, so no tokens are spent on a run whose results
 * cannot be kept. Each is one line naming the flag and the fix.
 */

function statOf(path: string) {
  try {
    return statSync(path);
  } catch {
    return undefined;
  }
}

/** --root: an existing folder. */
export function checkRoot(cwd: string, root: string): string {
  const path = resolve(cwd, root);
  const stat = statOf(path);
  if (!stat) throw new UsageError(`--root ${root}: no such folder (${path}); give an existing folder for read_file/list_files`);
  if (!stat.isDirectory()) throw new UsageError(`--root ${root}: is a file, not a folder; give the folder read_file/list_files may read`);
  return path;
}

/** An output file (--record, view --out): not a folder, and somewhere it can be created. */
export function checkWritableFile(flag: string, cwd: string, file: string, example: string): string {
  const path = resolve(cwd, file);
  const stat = statOf(path);
  if (stat?.isDirectory()) throw new UsageError(`${flag} ${file}: is a folder; give a file name inside it, e.g. ${flag} ${file.replace(/\/$/, "")}/${example}`);
  // The nearest existing ancestor must be a writable folder (missing folders below it are created).
  let dir = dirname(path);
  let dirStat = statOf(dir);
  while (!dirStat && dirname(dir) !== dir) {
    dir = dirname(dir);
    dirStat = statOf(dir);
  }
  if (dirStat && !dirStat.isDirectory()) throw new UsageError(`${flag} ${file}: ${dir} is a file, not a folder; choose another path, e.g. ${flag} ${example}`);
  try {
    accessSync(stat ? path : dir, constants.W_OK);
  } catch {
    throw new UsageError(`${flag} ${file}: cannot write ${stat ? path : `in ${dir}`} (permission denied); choose a writable path, e.g. ${flag} ${example}`);
  }
  return path;
}

/** A base URL from a flag, the environment or jianmu.yaml: http(s), or the SDK fails later and vaguely. */
export function checkBaseUrl(source: string, url: string): void {
  let ok = false;
  try {
    ok = ["http:", "https:"].includes(new URL(url).protocol);
  } catch {
    ok = false;
  }
  if (!ok) throw new UsageError(`${source} must be an http(s) URL such as http://127.0.0.1:8000/v1, got "${url}"`);
}
