import { FencedError } from "./errors.js";

interface Fence {
  token: number;
  /** Inbox events up to this id reached the actor; the next write marks them applied. */
  delivered: number;
  onLost: (error: Error) => void;
}

/** The fencing tokens of the runs this process holds, by run id: what every write of those runs must carry. */
export class Fences {
  private readonly fences = new Map<string, Fence>();

  fence(runId: string, token: number, onLost: (error: Error) => void): void {
    this.fences.set(runId, { token, delivered: 0, onLost });
  }

  unfence(runId: string): void {
    this.fences.delete(runId);
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
    fence?.onLost(error);
    return error;
  }
}
