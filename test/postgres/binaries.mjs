// How the throwaway PostgreSQL clusters (test/postgres/cluster.ts, bench/queue/cluster.mjs) find and run
// initdb and pg_ctl. Plain JavaScript so the benches, which run without a TypeScript step, share it.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";

const asRoot = typeof process.getuid === "function" && process.getuid() === 0;

/** Debian keeps initdb and pg_ctl out of PATH, in /usr/lib/postgresql/<major>/bin: the newest major that has it. */
export function postgresBinary(name) {
  const onPath = spawnSync("sh", ["-c", `command -v ${name}`], { encoding: "utf8" });
  if (onPath.status === 0 && onPath.stdout.trim()) return onPath.stdout.trim();
  const root = "/usr/lib/postgresql";
  const majors = existsSync(root) ? readdirSync(root).sort((a, b) => Number(b) - Number(a)) : [];
  for (const major of majors) if (existsSync(join(root, major, "bin", name))) return join(root, major, "bin", name);
  return name;
}

/** The command and arguments that run a PostgreSQL binary: as the `postgres` OS user when we are root, since the server refuses to run as root. */
export function postgresCommand(name, args) {
  const command = postgresBinary(name);
  return asRoot ? ["runuser", ["-u", "postgres", "--", command, ...args]] : [command, args];
}
