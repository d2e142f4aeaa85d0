// A throwaway PostgreSQL cluster for the queue benches when DATABASE_URL is unset (as test/postgres/cluster.ts):
// initdb into a temporary directory, pg_ctl on a free port, run as the postgres OS user when we are root.
import { spawn, spawnSync } from "node:child_process";
import { chmodSync, chownSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { postgresCommand as commandLine } from "../../test/postgres/binaries.mjs";

const asRoot = process.getuid?.() === 0;

function run(name, args) {
  const [cmd, argv] = commandLine(name, args);
  const result = spawnSync(cmd, argv, { encoding: "utf8" });
  if (result.status !== 0) throw new Error(`${name} failed: ${result.stderr || result.stdout} (set DATABASE_URL to use a running server)`);
}

/** pg_ctl without blocking this process; stdio ignored so the restarted server holds no pipe of ours. */
function runAsync(name, args) {
  const [cmd, argv] = commandLine(name, args);
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, argv, { stdio: "ignore" });
    child.once("error", reject);
    child.once("exit", (code) => (code === 0 ? resolve() : reject(new Error(`${name} ${args.join(" ")} exited with ${code}`))));
  });
}

function freePort() {
  return new Promise((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/**
 * `maxConnections`: the server's max_connections (default 200); `preload`: shared_preload_libraries
 * (e.g. "pg_stat_statements" to count statements); `settings`: more server settings by name. Durable settings (fsync on): a bench measures what a deployment pays.
 */
export async function startCluster({ maxConnections = 200, preload, settings = {} } = {}) {
  const dir = mkdtempSync(join(tmpdir(), "jianmu-bench-pg-"));
  chmodSync(dir, 0o700);
  if (asRoot) {
    const uid = Number(spawnSync("id", ["-u", "postgres"], { encoding: "utf8" }).stdout);
    const gid = Number(spawnSync("id", ["-g", "postgres"], { encoding: "utf8" }).stdout);
    chownSync(dir, uid, gid);
  }
  const data = join(dir, "data");
  run("initdb", ["-D", data, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8", "--locale=C"]);
  const port = await freePort();
  const options = `-c port=${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=${dir} -c max_connections=${maxConnections}${preload ? ` -c shared_preload_libraries=${preload}` : ""}${Object.entries(settings).map(([k, v]) => ` -c ${k}=${v}`).join("")}`;
  run("pg_ctl", ["-D", data, "-o", options, "-l", join(dir, "log"), "-w", "start"]);
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    /**
     * `pg_ctl restart`, without blocking the bench's own clients: `fast` (the default) flushes what was
     * committed first; `immediate` is a crash, and the server recovers from its WAL as it starts, so a
     * commit that did not wait for the disk may be gone.
     */
    restart: (mode = "fast") => runAsync("pg_ctl", ["-D", data, "-o", options, "-l", join(dir, "log"), "-m", mode, "-w", "restart"]),
    stop() {
      run("pg_ctl", ["-D", data, "-m", "fast", "-w", "stop"]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
