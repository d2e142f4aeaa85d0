import type { TestProject } from "vitest/node";
import { startCluster, type Cluster } from "./cluster.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** A PostgreSQL server for the tests: DATABASE_URL, or a throwaway cluster started here. */
    databaseUrl: string;
  }
}

let cluster: Cluster | undefined;

/** Vitest global setup: one PostgreSQL server for the whole run (each test file creates its own database on it). */
export async function setup(project: TestProject): Promise<void> {
  let url = process.env.DATABASE_URL;
  if (!url) {
    cluster = await startCluster();
    url = cluster.url;
  }
  project.provide("databaseUrl", url);
}

export function teardown(): void {
  cluster?.destroy();
  cluster = undefined;
}
