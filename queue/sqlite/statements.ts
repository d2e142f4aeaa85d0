/** SQL the SQLite store runs that tests also look at (the claim's plan): written once, here. */

/**
 * One agent's due runs (`wake_at <= now`: parked runs have no wake_at, or a later deadline, until
 * `send` or the deadline makes them due) in the order a claim takes them, up to a limit. Read from
 * `jianmu_runs_claimable` (agent, wake_at, created_at) without sorting, so neither parked runs nor a
 * backlog cost a claim anything. Parameters: agent, now, now, limit.
 */
export const DUE_RUNS_OF_AGENT = `SELECT r.*, NOT EXISTS (SELECT 1 FROM jianmu_inbox i WHERE i.run_id = r.run_id AND i.applied_at IS NULL) AS inbox_empty FROM jianmu_runs r
       WHERE r.agent = ? AND r.status IN ('queued', 'running', 'awaitingApproval') AND r.wake_at <= ?
         AND (r.owner IS NULL OR r.lease_until < ?)
       ORDER BY r.wake_at, r.created_at LIMIT ?`;
