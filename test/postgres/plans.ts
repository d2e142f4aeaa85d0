import type pg from "pg";
import { claimStatement } from "../../queue/postgres/statements.js";

/** A node of `EXPLAIN (ANALYZE, FORMAT JSON)`, as far as the claim tests read it. */
export interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  "Index Name"?: string;
  "Actual Rows"?: number;
  "Actual Loops"?: number;
  "Rows Removed by Filter"?: number;
  Plans?: PlanNode[];
}

/** The scans of `runs` in a plan, with how many rows each looked at (returned plus filtered out). */
export function scansOfRuns(plan: PlanNode): { type: string; index?: string; examined: number }[] {
  const found: { type: string; index?: string; examined: number }[] = [];
  const visit = (node: PlanNode) => {
    if (node["Relation Name"] === "runs") {
      const loops = node["Actual Loops"] ?? 1;
      found.push({ type: node["Node Type"], ...(node["Index Name"] ? { index: node["Index Name"] } : {}), examined: ((node["Actual Rows"] ?? 0) + (node["Rows Removed by Filter"] ?? 0)) * loops });
    }
    for (const child of node.Plans ?? []) visit(child);
  };
  visit(plan);
  return found;
}

/**
 * The scans of `runs` in the plan of one claim (up to `limit` runs of `agents` in `schema`), run
 * under EXPLAIN ANALYZE in a transaction rolled back, so nothing is claimed.
 */
export async function claimScans(client: pg.Client, schema: string, agents: string[], limit = 4): Promise<{ type: string; index?: string; examined: number }[]> {
  await client.query("BEGIN");
  try {
    const { rows } = await client.query<{ "QUERY PLAN": { Plan: PlanNode }[] }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${claimStatement(schema, agents)}`, [limit, "probe", 1_000]);
    return scansOfRuns(rows[0]!["QUERY PLAN"][0]!.Plan);
  } finally {
    await client.query("ROLLBACK");
  }
}
