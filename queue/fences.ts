import { FencedError } from "./errors.js";

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

  private retire(runId: string, fence: Fence): void {
    const now = Date.now();
    this.retired.set(runId, { at: now, delivered: fence.delivered });
    if (this.retired.size > 1_000) for (const [id, { at }] of this.retired) if (now - at > RETIRED_MS) this.retired.delete(id);
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

  get(runId: string): { token: number; delivered: number } | undefined {
    return this.fences.get(runId);
  }

  /** The write found another token: tell the run's owner (it stops the actor) and return the error to throw. */
  lost(runId: string): FencedError {
    const fence = this.fences.get(runId);
    const error = new FencedError(runId, fence?.token ?? -1);
    this.fences.delete(runId);
    if (fence) this.retire(runId, fence);
    fence?.onLost(error);
    return error;
  }
}
