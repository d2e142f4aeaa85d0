import { JianmuError } from "../../../tools/jianmu-error.js";

/**
 * A run of a thread was started while the thread's latest run has not ended: runs of one thread
 * never interleave (the second one would not see the first one's answer). Names the run in the way.
 */
export class ThreadBusyError extends JianmuError {
  static override readonly errorCode = "THREAD_BUSY";
  override name = "ThreadBusyError";
  constructor(
    readonly threadId: string,
    /** The thread's run that has not ended. */
    readonly activeRunId: string,
  ) {
    super(
      `thread ${threadId} is busy: its run ${activeRunId} has not ended; start the next run once it has (wait for it, or finish or cancel it: restore it from its checkpoint with restoreAgent)`,
    );
  }
}
