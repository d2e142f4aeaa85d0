import { MemoryRunLog, type MemoryLogOptions } from "../log/memory-log.js";

/**
 * Checkpoints and a tool journal in memory, for tests and short-lived processes: the run log's
 * memory backend (every checkpoint kept, the conversation stored once, forks and threads). Records
 * are kept as JSON text, so what `load` returns went through the same round trip as a real store's.
 */
export class MemoryCheckpointStore extends MemoryRunLog {
  constructor(options: MemoryLogOptions = {}) {
    super(options);
  }
}
