import { FencedError, RunGivenUpError } from "./errors.js";

/** How long a given-up run's late writes are refused (far longer than any write takes to arrive). */
const RETIRED_MS = 10 * 60_000;

interface Fence {
  token: number;
  /** Inbox events up to this id reached the actor; the next write marks them applied. */
  delivered: number;
  onLost: (error: Error) => void;
}

/** The fencing tokens of the runs this process holds, by run id: what every write of those runs must carry. */
export class Fences {
  private readonly fences = new Map<string, Fence>();
  /**
   * Runs this process held and gave up (parked, finished, released, lost), with when: a write still
   * on its way from the stopped actor (an asynchronous save queued before it stopped) must not pass
   * for an unfenced one. Forgotten after a while, or when the run is claimed again.
   */
  private readonly retired = new Map<string, { at: number; delivered: number }>();
  /** Until when this process holds each claimed run's lease, by its own clock (a lower bound: measured from before the claim or renewal was sent). */
  private readonly leases = new Map<string, { token: number; until: number }>();

  fence(runId: string, token: number, onLost: (error: Error) => void): void {
    this.retired.delete(runId);
    this.fences.set(runId, { token, delivered: 0, onLost });
  }

  unfence(runId: string): void {
    const fence = this.fences.get(runId);
    if (!fence) return;
    this.fences.delete(runId);
    this.retire(runId, fence);
  }

  /**
   * The map stays in the order runs were retired (a run retired again goes to the end), so the expired
   * ones are at its front: forgetting them stops at the first that has not expired. Scanning the whole
   * map instead cost every finished run a pass over all the runs retired in the last ten minutes.
   */
  private retire(runId: string, fence: Fence): void {
    const now = Date.now();
    this.retired.delete(runId);
    this.retired.set(runId, { at: now, delivered: fence.delivered });
    for (const [id, { at }] of this.retired) {
      if (now - at <= RETIRED_MS) break;
      this.retired.delete(id);
    }
  }

  /**
   * The fence a write of this run must carry: undefined for a run this process never held (a plain
   * `runAgent` checkpoint); throws FencedError for one it gave up (the write comes from a stopped actor).
   */
  forWrite(runId: string): { token: number; delivered: number } | undefined {
    const fence = this.fences.get(runId);
    if (fence) return fence;
    const retired = this.retired.get(runId);
    if (retired !== undefined && Date.now() - retired.at <= RETIRED_MS) throw new FencedError(runId, -1);
    return undefined;
  }

  /** Inbox events up to this id reached the run's actor (also after it was unfenced, for the hand-back). */
  deliveredOf(runId: string): number {
    return this.fences.get(runId)?.delivered ?? this.retired.get(runId)?.delivered ?? 0;
  }

  delivered(runId: string, throughId: number): void {
    const fence = this.fences.get(runId);
    if (fence) fence.delivered = Math.max(fence.delivered, throughId);
  }

  /** This process holds the run under another token than `token`: a write under `token` is not the holder's. */
  heldOtherwise(runId: string, token: number): boolean {
    const fence = this.fences.get(runId);
    return fence !== undefined && fence.token !== token;
  }

  get(runId: string): { token: number; delivered: number } | undefined {
    return this.fences.get(runId);
  }

  /**
   * A write carrying `token` found another token: tell the run's owner (it stops the actor) and return
   * the error to throw. Only the holder under that token is told: a write still on its way from an
   * earlier copy of the run (stopped, then claimed again by this process) must not stop the new one.
   */
  lost(runId: string, token: number): FencedError {
    return this.stop(runId, token, new FencedError(runId, token));
  }

  /**
   * The database stayed away through the rest of the lease of `token`: tell the run's owner under that
   * token (it stops the actor and writes nothing more; the run resumes elsewhere from its checkpoint)
   * and return the error to throw.
   */
  giveUp(runId: string, token: number, cause: unknown): RunGivenUpError {
    const reason = cause instanceof Error ? cause.message : String(cause);
    return this.stop(runId, token, new RunGivenUpError(runId, `run ${runId} was given up by this worker: the database stayed unreachable until its lease ran out (${reason}); it resumes from its last checkpoint`, { cause }));
  }

  private stop<E extends Error>(runId: string, token: number, error: E): E {
    const fence = this.fences.get(runId);
    if (fence?.token !== token) return error;
    this.fences.delete(runId);
    this.leases.delete(runId);
    this.retire(runId, fence);
    fence.onLost(error);
    return error;
  }

  /** A claim or renewal of the run under this token succeeded: its lease lasts at least until `until`. */
  leased(runId: string, token: number, until: number): void {
    const known = this.leases.get(runId);
    if (known && known.token > token) return;
    this.leases.set(runId, { token, until });
    if (this.leases.size > 10_000) for (const [id, lease] of this.leases) if (lease.until < Date.now() - RETIRED_MS) this.leases.delete(id);
  }

  /** When this process's lease on the run (under this token) ends: 0 when it holds none. */
  leaseEnd(runId: string, token: number): number {
    const lease = this.leases.get(runId);
    return lease && lease.token === token ? lease.until : 0;
  }

  /** The run was handed back (parked, finished, released): no lease is held any more. */
  handedBack(runId: string, token: number): void {
    if (this.leases.get(runId)?.token === token) this.leases.delete(runId);
  }
}
