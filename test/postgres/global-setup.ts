import type { TestProject } from "vitest/node";
import { startCluster, type Cluster } from "./cluster.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** A PostgreSQL server for the tests: DATABASE_URL, or a throwaway cluster started here ("" when none could start). */
    databaseUrl: string;
    /** Why no server could be started (the PostgreSQL tests fail with it; the others run). */
    databaseError: string;
  }
}

let cluster: Cluster | undefined;

/** Vitest global setup: one PostgreSQL server for the whole run (each test file creates its own database on it). */
export async function setup(project: TestProject): Promise<void> {
  let url = process.env.DATABASE_URL;
  let problem = "";
  if (!url) {
    try {
      cluster = await startCluster();
      url = cluster.url;
      // A run cut short (Ctrl-C, a CI timeout) must not leave a server behind: stop it on the way out.
      process.once("exit", teardown);
      for (const signal of ["SIGINT", "SIGTERM"] as const) {
        process.once(signal, () => {
          teardown();
          process.exit(130);
        });
      }
    } catch (error) {
      problem = error instanceof Error ? error.message : String(error);
    }
  }
  project.provide("databaseUrl", url ?? "");
  project.provide("databaseError", problem);
}

export function teardown(): void {
  const running = cluster;
  cluster = undefined;
  running?.destroy();
}
