// A throwaway PostgreSQL cluster for the queue bench when DATABASE_URL is unset (as test/postgres/cluster.ts):
// initdb into a temporary directory, pg_ctl on a free port, run as the postgres OS user when we are root.
import { spawnSync } from "node:child_process";
import { chmodSync, chownSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

const asRoot = process.getuid?.() === 0;

function run(command, args) {
  const [cmd, argv] = asRoot ? ["runuser", ["-u", "postgres", "--", command, ...args]] : [command, args];
  const result = spawnSync(cmd, argv, { encoding: "utf8" });
  if (result.status !== 0) throw new Error(`${command} failed: ${result.stderr || result.stdout} (set DATABASE_URL to use a running server)`);
}

function freePort() {
  return new Promise((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

export async function startCluster() {
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
  // Durable settings (fsync on): the bench measures what a real deployment pays per write.
  run("pg_ctl", ["-D", data, "-o", `-c port=${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=${dir} -c max_connections=200`, "-l", join(dir, "log"), "-w", "start"]);
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    stop() {
      run("pg_ctl", ["-D", data, "-m", "fast", "-w", "stop"]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
