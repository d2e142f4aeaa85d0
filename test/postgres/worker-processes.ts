import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { WorkerEvent } from "../../queue/worker-events.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
export const dist = join(root, "dist");
const child = fileURLToPath(new URL("./worker-child.mjs", import.meta.url));

/** The multi-process tests run workers on the built package: `npm run build` first (npm test does). */
export function checkBuilt(): void {
  if (!existsSync(join(dist, "postgres.js"))) throw new Error(`${join(dist, "postgres.js")} is missing: run \`npm run build\` before the PostgreSQL worker tests`);
}

export interface WorkerProcessOptions {
  url: string;
  schema: string;
  /** A SQLite file instead of PostgreSQL (url and schema are then unused). */
  sqlite?: string;
  baseURL: string;
  id: string;
  concurrency?: number;
  leaseMs?: number;
  pollMs?: number;
  listen?: boolean;
  approvalTimeoutMs?: number;
  /** The store's pool size (default: the store's default). */
  maxConnections?: number;
  /** Count effects as lines in this file instead of a table (no connection of their own). */
  effectsFile?: string;
}

/** A real worker process (worker-child.mjs) and the events it printed. */
export class WorkerProcess {
  readonly events: WorkerEvent[] = [];
  readonly process: ChildProcess;
  readonly exited: Promise<number | null>;
  private stderr = "";
  private waiters: (() => void)[] = [];

  constructor(readonly options: WorkerProcessOptions) {
    this.process = spawn(process.execPath, [child, JSON.stringify({ dist, ...options })], { stdio: ["ignore", "pipe", "pipe"] });
    let buffer = "";
    this.process.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
      buffer += chunk;
      let newline: number;
      while ((newline = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + 1);
        if (line.trim()) this.events.push(JSON.parse(line) as WorkerEvent);
      }
      for (const wake of this.waiters.splice(0)) wake();
    });
    this.process.stderr!.setEncoding("utf8").on("data", (chunk: string) => (this.stderr += chunk));
    this.exited = new Promise((resolve) => this.process.once("exit", (code) => resolve(code)));
  }

  /** Resolves with the first event (already seen or to come) that matches. */
  waitFor(predicate: (event: WorkerEvent) => boolean, what: string, timeoutMs = 20_000): Promise<WorkerEvent> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`worker ${this.options.id}: timed out waiting for ${what}; stderr: ${this.stderr.slice(-2000)}`)), timeoutMs);
      const check = () => {
        const found = this.events.find(predicate);
        if (found) {
          clearTimeout(timer);
          resolve(found);
        } else this.waiters.push(check);
      };
      check();
    });
  }

  signal(signal: NodeJS.Signals): void {
    this.process.kill(signal);
  }

  /** kill -9 and wait until it is gone. */
  async kill(): Promise<void> {
    if (this.process.exitCode === null && this.process.signalCode === null) this.process.kill("SIGKILL");
    await this.exited;
  }

  /** SIGTERM (graceful stop) and wait. */
  async stop(): Promise<void> {
    if (this.process.exitCode === null && this.process.signalCode === null) this.process.kill("SIGTERM");
    await this.exited;
  }

  get errors(): string {
    return this.stderr;
  }
}
