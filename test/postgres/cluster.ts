import { spawn, spawnSync } from "node:child_process";
import { chmodSync, chownSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { postgresBinary, postgresCommand as commandLine } from "./binaries.mjs";

/**
 * A throwaway PostgreSQL cluster for tests: `initdb` into a temporary directory, `pg_ctl` with a
 * socket directory of its own and a free TCP port, trust authentication on loopback. As root
 * (CI, containers) the server runs as the `postgres` OS user, since PostgreSQL refuses to run as root.
 */
export interface Cluster {
  /** `postgres://postgres@127.0.0.1:<port>/postgres` */
  url: string;
  port: number;
  dir: string;
  /** Stop the server (fast shutdown) and keep the data directory, for `start()` again. */
  stopServer(): void;
  /** Start the stopped server again on the same port. */
  startServer(): void;
  /** The same without blocking this process (its own clients keep running while the server goes and comes). */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Stop the server and delete the data directory. */
  destroy(): void;
}

const asRoot = typeof process.getuid === "function" && process.getuid() === 0;

/** pg_ctl without blocking: stdio ignored (a server started with `-l` keeps no pipe of ours open). */
function runAsync(name: string, args: string[]): Promise<void> {
  const [cmd, argv] = commandLine(name, args);
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, argv, { stdio: "ignore" });
    child.once("error", reject);
    child.once("exit", (code) => (code === 0 ? resolve() : reject(new Error(`${name} ${args.join(" ")} exited with ${code}`))));
  });
}

function run(name: string, args: string[]): void {
  const command = postgresBinary(name);
  const [cmd, argv] = commandLine(name, args);
  const result = spawnSync(cmd, argv, { encoding: "utf8" });
  if (result.status !== 0) {
    throw new Error(
      `${command} ${args.join(" ")} failed (${result.error?.message ?? `exit ${result.status}`}): ${result.stderr || result.stdout}\n` +
        "The PostgreSQL tests need Debian's postgresql 15 binaries (initdb, pg_ctl) on PATH, or DATABASE_URL pointing at a server.",
    );
  }
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** `maxConnections`: the server's max_connections (default 200, for several worker processes). */
export async function startCluster(settings: { maxConnections?: number } = {}): Promise<Cluster> {
  const dir = mkdtempSync(join(tmpdir(), "jianmu-pg-"));
  chmodSync(dir, 0o700);
  if (asRoot) {
    const ids = spawnSync("id", ["-u", "postgres"], { encoding: "utf8" });
    const gids = spawnSync("id", ["-g", "postgres"], { encoding: "utf8" });
    chownSync(dir, Number(ids.stdout.trim()), Number(gids.stdout.trim()));
  }
  const data = join(dir, "data");
  try {
    run("initdb", ["-D", data, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8", "--locale=C"]);
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  const port = await freePort();
  // fsync off: a throwaway cluster.
  const options = `-c port=${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=${dir} -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=${settings.maxConnections ?? 200}`;
  const startArgs = ["-D", data, "-o", options, "-l", join(dir, "server.log"), "-w", "-t", "30", "start"];
  const stopArgs = ["-D", data, "-m", "fast", "-w", "stop"];
  const startServer = () => run("pg_ctl", startArgs);
  const stopServer = () => run("pg_ctl", stopArgs);
  try {
    startServer();
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  let running = true;
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    dir,
    stopServer() {
      stopServer();
      running = false;
    },
    startServer() {
      startServer();
      running = true;
    },
    async stop() {
      await runAsync("pg_ctl", stopArgs);
      running = false;
    },
    async start() {
      await runAsync("pg_ctl", startArgs);
      running = true;
    },
    destroy() {
      try {
        if (running) stopServer();
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
