import type { RunEvent } from "../protocol.js";
import type { ChatStream } from "./chat-runs.js";
import { HEARTBEAT, SSE_HEADERS } from "./sse.js";

/** Turns a run's events into another protocol's, one response long. */
export interface RunTranslator<Chunk> {
  translate(event: RunEvent): Chunk[];
  /** End the response now: the run waits for a person, or the log closed before the run's end. */
  finish(why: "awaitingApproval" | "logClosed"): Chunk[];
  /** True once the response's last chunk was made. */
  readonly ended: boolean;
}

export interface TranslatedStreamOptions<Chunk> {
  /** The run's events this response tells: those there already, then the new ones. */
  run: ChatStream;
  translator: RunTranslator<Chunk>;
  /** Chunks before the run's (the protocol's opening). */
  head: readonly Chunk[];
  /** The end of the stream after the last chunk (e.g. `data: [DONE]`), if the protocol has one. */
  tail?: string;
  heartbeatMs: number;
  headers: Record<string, string>;
}

/**
 * A run's events (its backlog, then its feed) as server-sent `data: <json>` lines in another protocol, until its
 * translator ends the response (the run finished, or parked for approval). A page that hangs up
 * only stops following; the run goes on.
 */
export function translatedStream<Chunk>(options: TranslatedStreamOptions<Chunk>): Response {
  const { run, translator } = options;
  const encoder = new TextEncoder();
  let heartbeat: ReturnType<typeof setInterval> | undefined;
  let unfollow = (): void => undefined;
  const release = () => {
    clearInterval(heartbeat);
    unfollow();
  };
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      let open = true;
      const write = (chunks: readonly Chunk[]) => {
        if (!open) return;
        for (const chunk of chunks) controller.enqueue(encoder.encode(`data: ${JSON.stringify(chunk)}\n\n`));
        if (!translator.ended) return;
        open = false;
        release();
        if (options.tail !== undefined) controller.enqueue(encoder.encode(options.tail));
        controller.close();
      };
      write(options.head);
      for (const event of run.backlog()) write(translator.translate(event));
      // Answers to only some of the waiting calls leave the run waiting: nothing more comes until the rest.
      if (run.waiting()) write(translator.finish("awaitingApproval"));
      if (!open) return;
      heartbeat = setInterval(() => controller.enqueue(encoder.encode(HEARTBEAT)), options.heartbeatMs);
      (heartbeat as { unref?: () => void }).unref?.();
      unfollow = run.feed.follow(
        (event) => write(translator.translate(event)),
        // The feed closed without the run's end (the server let the run go, or it ended unseen): end the response.
        () => write(translator.finish("logClosed")),
      );
    },
    cancel() {
      release();
    },
  });
  return new Response(body, { status: 200, headers: { ...SSE_HEADERS, ...options.headers, "x-run-id": run.runId } });
}
