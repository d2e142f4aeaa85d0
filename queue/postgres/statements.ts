/** SQL the store runs that tests also look at (the claim's plan): written once, here. */
import pg from "pg";

const preparedNames = new Map<string, string | undefined>();
/** Statements named at most (the store's texts are a few dozen; anything past this goes unnamed). */
const MAX_PREPARED = 500;

/**
 * The name a statement is prepared under on every connection of this process (the same text, the
 * same name, whichever store sends it), or undefined to send it unnamed: a statement returning `*`
 * would fail once a migration adds a column (a cached plan must not change its result type).
 */
export function preparedName(text: string): string | undefined {
  if (preparedNames.has(text)) return preparedNames.get(text);
  if (preparedNames.size >= MAX_PREPARED) return undefined;
  const name = /SELECT\s+\*|\w\.\*|RETURNING\s+\*/i.test(text) ? undefined : `jianmu_${preparedNames.size + 1}`;
  preparedNames.set(text, name);
  return name;
}

/** The database's clock in epoch ms: leases are judged by one clock, whichever machine writes. */
export const NOW = `(extract(epoch from clock_timestamp()) * 1000)::bigint`;

/**
 * The same clock read once per statement (`now()` is the transaction's start, and each claim is a
 * transaction of its own): stable, so the planner can use it as an index bound, which a volatile
 * `clock_timestamp()` cannot be.
 */
const STATEMENT_NOW = `(extract(epoch from now()) * 1000)::bigint`;

/**
 * A worker's agents as an array literal in the statement's text, not a parameter: a worker claims
 * for the same agents every time, so the text stays one prepared statement, and its generic plan is
 * the plan the values give. With `ANY($n)` PostgreSQL prices the generic plan for an array it does not
 * know (several times the cost, once the table has statistics) and plans every claim afresh, which
 * took longer than running it (0.3 ms against 0.1, bench/README). Each name is quoted by
 * `pg.escapeLiteral`, so no name can end the literal.
 */
function agentList(agents: readonly string[]): string {
  return `ARRAY[${agents.map((agent) => pg.escapeLiteral(agent)).join(", ")}]::text[]`;
}

/**
 * The due runs a claim takes: up to $`limit` of `agents`, oldest first. Due means `wake_at <= now`: a
 * parked run has no wake_at, or a future deadline, until `send` or its deadline makes it due, so
 * however many runs are parked, a claim never looks at them. Each agent's due runs are read from
 * `runs_due` (agent, wake_at, created_at) in the order they are taken, a few per agent, and the
 * oldest of those win: a backlog of queued runs costs a claim nothing either (one statement over all
 * the agents read and sorted every due run: 6 ms beside 5,000). `SKIP LOCKED`: workers claiming at
 * once take different runs. With several agents, up to $`limit` runs of each are locked until the
 * claim commits, the ones not taken included; a worker claiming in that moment passes over them.
 */
function dueRuns(schema: string, agents: readonly string[], limit: number, except = ""): string {
  return `SELECT d.run_id FROM unnest(${agentList(agents)}) AS a(agent)
       CROSS JOIN LATERAL (
         SELECT r.run_id, r.wake_at, r.created_at FROM ${schema}.runs r
         WHERE r.agent = a.agent AND r.status IN ('queued', 'running', 'awaitingApproval') AND r.wake_at <= ${STATEMENT_NOW}${except}
           AND (r.owner IS NULL OR r.lease_until < ${STATEMENT_NOW})
         ORDER BY r.wake_at, r.created_at
         LIMIT $${limit}
         FOR UPDATE SKIP LOCKED) d
       ORDER BY d.wake_at, d.created_at
       LIMIT $${limit}`;
}

/**
 * The claim's update of the runs `taken` names: owner $`owner`, leased for $`lease` ms, each with a new
 * fencing token. It also says whether each run's inbox is empty, and whether it has a seed (a
 * thread's earlier run), so that a fresh run costs no inbox read and no read of its head before its
 * first save.
 *
 * The new token is above both the old one and the database's clock in ms. A claim committed without
 * waiting for its flush (`claimStatement`) can be lost in a crash with the server; the next claim after
 * the restart then comes at a later ms and gets another token, never the lost one, so the worker that
 * held the lost claim finds its writes fenced off instead of sharing the run.
 */
function takeRuns(schema: string, taken: string, owner: number, lease: number, also = ""): string {
  return `UPDATE ${schema}.runs r SET owner = $${owner}, token = GREATEST(r.token + 1, ${NOW}), lease_until = ${NOW} + $${lease}, wake_at = ${NOW},
       status = 'running', updated_at = ${NOW}
     FROM ${taken} WHERE r.run_id = ${taken}.run_id${also}
     RETURNING r.run_id, r.agent, r.token, r.input, r.head, r.seed,
       NOT EXISTS (SELECT 1 FROM ${schema}.inbox i WHERE i.run_id = r.run_id AND i.applied_at IS NULL) AS inbox_empty`;
}

/**
 * The commit of the statement that evaluates this does not wait for its WAL to reach the disk
 * (`set_config(..., true)` lasts to the end of the statement's own transaction, its commit included).
 */
const COMMIT_WITHOUT_FLUSH = `set_config('synchronous_commit', 'off', true) IS NOT NULL`;

/**
 * The claim: up to $1 due runs of `agents` for owner $2, leased for $3 ms. It commits without
 * waiting for the disk: a claim lost in a crash is a worker that died as it claimed (the run is due
 * again, and the token rule of `takeRuns` fences the lost holder off), and the holder's first
 * durable write (a journal entry before any tool runs, a checkpoint, a renewal) flushes the claim
 * with it. The flush was most of a claim's time (1-2 ms against 0.3-0.5 ms without, bench/README).
 */
export function claimStatement(schema: string, agents: readonly string[]): string {
  return `WITH c AS (${dueRuns(schema, agents, 1)})
     ${takeRuns(schema, "c", 2, 3, ` AND ${COMMIT_WITHOUT_FLUSH}`)}`;
}

/** A claim row as the claim returns it, or as `claimAfterFinish` returns it in JSON (numbers, not text). */
export interface ClaimRow {
  run_id: string;
  agent: string;
  token: string | number;
  input: string;
  head: string | number | null;
  seed: string | number | null;
  inbox_empty: boolean;
}

/**
 * The claim as more of a finish's statement (PostgresRunLog's `LastSave.also`): taken only once the
 * finish is written (`ok`), never the finished run itself ($1), its rows back as one JSON array
 * (null when none). Its parameters are numbered from `at`.
 */
export function claimAfterFinish(schema: string, at: number, request: { agents: readonly string[]; limit: number; owner: string; leaseMs: number }) {
  return {
    ctes: `, nc AS (${dueRuns(schema, request.agents, at, " AND r.run_id <> $1::text")}),
       cl AS (${takeRuns(schema, "nc", at + 1, at + 2, " AND EXISTS (SELECT 1 FROM ok)")})`,
    values: [request.limit, request.owner, request.leaseMs],
    select: `(SELECT json_agg(cl) FROM cl)`,
  };
}
