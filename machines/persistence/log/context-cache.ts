import type { RunContext } from "./streams.js";

/**
 * What a SQLite or PostgreSQL store remembers of the runs it wrote lately: each run's latest
 * checkpoint and its streams' texts, so that the next save compares and appends without reading the
 * conversation back. Checked against the stored head before use (another process may have written
 * since); bounded by the characters it holds, least recently used first out.
 */
export class RunContextCache {
  private readonly runs = new Map<string, { context: RunContext; chars: number }>();
  private chars = 0;

  constructor(private readonly maxChars = 64 * 1024 * 1024) {}

  /** The run's context if it reflects `head` (the run's latest checkpoint as stored now). */
  get(runId: string, head: number | null | undefined): RunContext | undefined {
    const found = this.runs.get(runId);
    if (!found || found.context.head !== (head ?? undefined)) return undefined;
    this.runs.delete(runId);
    this.runs.set(runId, found);
    return found.context;
  }

  /** The run's context whatever head it reflects (a writer that checks the head in its write statement). */
  peek(runId: string): RunContext | undefined {
    return this.runs.get(runId)?.context;
  }

  set(context: RunContext): void {
    this.delete(context.runId);
    let chars = 0;
    for (const stream of context.known.values()) for (const text of stream.texts) chars += text.length;
    if (chars > this.maxChars) return;
    this.runs.set(context.runId, { context, chars });
    this.chars += chars;
    for (const [runId, entry] of this.runs) {
      if (this.chars <= this.maxChars) break;
      this.runs.delete(runId);
      this.chars -= entry.chars;
    }
  }

  delete(runId: string): void {
    const found = this.runs.get(runId);
    if (!found) return;
    this.runs.delete(runId);
    this.chars -= found.chars;
  }
}
