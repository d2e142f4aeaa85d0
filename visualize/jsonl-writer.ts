import { createWriteStream, mkdirSync, type WriteStream } from "node:fs";
import { dirname } from "node:path";
import { RecordingError } from "./recording-errors.js";

export { RecordingError };

export interface JsonlWriterOptions {
  /**
   * Lines waiting for the stream to drain are held up to this many bytes (default 8 MiB);
   * past it new lines are dropped and counted, so a slow disk cannot grow memory without bound.
   */
  maxQueuedBytes?: number;
}

/**
 * Appends JSON lines to a file through a write stream. Inspection callbacks are synchronous and
 * cannot wait, so when the stream asks to stop (`write` returned false) lines queue here until
 * `drain`, within a byte budget.
 */
export class JsonlWriter {
  readonly path: string;
  private readonly stream: WriteStream;
  private readonly maxQueuedBytes: number;
  private queue: string[] = [];
  private queuedBytes = 0;
  private waitingForDrain = false;
  private failure: RecordingError | undefined;
  private closing: Promise<void> | undefined;
  lines = 0;
  dropped = 0;

  constructor(path: string, options: JsonlWriterOptions = {}) {
    this.path = path;
    this.maxQueuedBytes = options.maxQueuedBytes ?? 8 * 1024 * 1024;
    try {
      mkdirSync(dirname(path), { recursive: true });
    } catch (error) {
      this.failure = new RecordingError(path, `cannot create its directory: ${(error as Error).message}`, { cause: error });
    }
    this.stream = createWriteStream(path, { flags: "w", encoding: "utf8" });
    this.stream.on("error", (error) => {
      this.failure ??= new RecordingError(path, error.message, { cause: error });
      this.queue = [];
      this.queuedBytes = 0;
    });
    this.stream.on("drain", () => this.flush());
  }

  /** Lines accepted but still waiting for the stream to drain. */
  get pending(): number {
    return this.queue.length;
  }

  /** The first write error, if any (writing stops after it). */
  get error(): RecordingError | undefined {
    return this.failure;
  }

  write(record: unknown): void {
    if (this.failure || this.closing) return;
    const line = `${JSON.stringify(record)}\n`;
    if (this.waitingForDrain) {
      if (this.queuedBytes + line.length > this.maxQueuedBytes) {
        this.dropped += 1;
        return;
      }
      this.queue.push(line);
      this.queuedBytes += line.length;
      return;
    }
    this.lines += 1;
    if (!this.stream.write(line)) this.waitingForDrain = true;
  }

  private flush(): void {
    this.waitingForDrain = false;
    while (this.queue.length > 0) {
      const line = this.queue.shift()!;
      this.queuedBytes -= line.length;
      this.lines += 1;
      if (!this.stream.write(line)) {
        this.waitingForDrain = true;
        return;
      }
    }
  }

  /** Write what is queued, then close the file. Rejects with a RecordingError when writing failed. */
  close(last?: unknown): Promise<void> {
    if (!this.closing) {
      if (last !== undefined) this.write(last);
      this.closing = new Promise<void>((resolve, reject) => {
        const finish = () => {
          if (this.failure) {
            this.stream.destroy();
            reject(this.failure);
            return;
          }
          this.stream.end(() => (this.failure ? reject(this.failure) : resolve()));
        };
        const settleQueue = () => {
          if (this.failure || this.queue.length === 0) finish();
          else this.stream.once("drain", () => setImmediate(settleQueue));
        };
        this.stream.once("error", () => finish());
        settleQueue();
      });
    }
    return this.closing;
  }
}
