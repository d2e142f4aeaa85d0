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
