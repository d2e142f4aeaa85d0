import { describe, expect, it } from "vitest";
import type { ToolOutcome } from "../../actors/tool-outcome.js";
import { FencedError } from "../../queue/errors.js";
import { storeWithAdmin } from "./database.js";

/*
 * A claim commits without waiting for the disk, so a server crash can take it back: the worker that
 * held it finds its next write fenced off, stops that copy of the run, and may claim the run again
 * at once, in the same process. A statement of the stopped copy can still be on its way then
 * (retried through the restart). Found by the chaos smoke: such a statement, finding the token moved
 * on, stopped the *new* copy in the middle of its tool call, and the run's next holder told the model
 * the call's outcome was unknown although it had run and returned. The late statement must fail
 * alone, and the new copy go on.
 */
describe("PostgreSQL run queue: a late statement of a stopped copy of the run", () => {
  const fixture = storeWithAdmin("stale", { listen: false, pollMs: 100 });

  it("fails alone: the copy that claimed the run again keeps its fence and writes under it", async () => {
    const { admin, store } = fixture;
    const runId = await store.submit({ agent: "a", input: { messages: [{ role: "user", content: "go" }] } });
    const [claimed] = await store.claim({ owner: "w", agents: ["a"], limit: 1, leaseMs: 60_000 });
    expect(claimed?.runId).toBe(runId);
    const first = claimed!.token;
    const stopped: string[] = [];
    store.fence(runId, first, () => stopped.push("first copy"));

    // The first copy's journal write is held up behind a lock on the run's row...
    await admin.query("BEGIN");
    await admin.query(`SELECT 1 FROM stale.runs WHERE run_id = $1 FOR UPDATE`, [runId]);
    const outcome: ToolOutcome = { callId: "c1", name: "record", status: "ok", content: "recorded", durationMs: 1, effectTags: [] };
    const late = store.completed({ runId, iteration: 0, callId: "c1" }, outcome).then(
      () => "written",
      (error: unknown) => error,
    );
    // ...while the run changes hands (its claim lost, then taken again), and this process holds the
    // new copy: the first one was stopped, the second fenced under the new token.
    await admin.query(`UPDATE stale.runs SET token = token + 1 WHERE run_id = $1`, [runId]);
    store.unfence(runId);
    store.fence(runId, first + 1, () => stopped.push("second copy"));
    await admin.query("COMMIT");

    const error = await late;
    expect(error).toBeInstanceOf(FencedError);
    expect(error).toMatchObject({ token: first });
    expect(stopped).toEqual([]);
    // The second copy's own writes still pass: it claims the call the first copy never recorded.
    await expect(store.started({ runId, iteration: 0, callId: "c1" }, "record")).resolves.toBe(true);
    await expect(store.lookup({ runId, iteration: 0, callId: "c1" })).resolves.toEqual({ state: "started", name: "record" });
  });
});
