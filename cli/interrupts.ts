/**
 * Why the CLI must stop early: a signal, Ctrl-C/Ctrl-D at a prompt, or stdout gone (EPIPE). The
 * first one asks whatever is running (a run, the server) to wind down cleanly and decides the
 * exit code; a second signal means "now" and exits at once.
 */
export interface Interruption {
  /** 130 (SIGINT, Ctrl-C, Ctrl-D at a prompt), 143 (SIGTERM), 0 (stdout closed: nobody is reading). */
  code: number;
  /** Said in the summary, e.g. "interrupted (Ctrl-C)". */
  detail: string;
  /** Print nothing more (the reader of stdout has gone). */
  quiet: boolean;
}

export class Interrupts {
  private current: Interruption | undefined;
  private readonly handlers = new Set<(why: Interruption) => void>();
  private resolveFirst!: (why: Interruption) => void;
  /** Resolves on the first interruption. */
  readonly first: Promise<Interruption> = new Promise((resolve) => (this.resolveFirst = resolve));

  constructor(private readonly exitNow: (code: number) => void) {}

  get reason(): Interruption | undefined {
    return this.current;
  }

  trigger(why: Interruption): void {
    if (this.current) {
      if (!why.quiet) this.exitNow(why.code);
      return;
    }
    this.current = why;
    this.resolveFirst(why);
    if (this.handlers.size === 0) return this.exitNow(why.code);
    for (const handler of this.handlers) handler(why);
  }

  /** Run `handler` on the first interruption (at once if it already happened); returns the undo. */
  on(handler: (why: Interruption) => void): () => void {
    this.handlers.add(handler);
    if (this.current) handler(this.current);
    return () => this.handlers.delete(handler);
  }
}

export const SIGINT: Interruption = { code: 130, detail: "interrupted (Ctrl-C)", quiet: false };
export const SIGTERM: Interruption = { code: 143, detail: "terminated (SIGTERM)", quiet: false };
export const PROMPT_CLOSED: Interruption = { code: 130, detail: "interrupted at the approval prompt (Ctrl-D)", quiet: false };
export const STDOUT_CLOSED: Interruption = { code: 0, detail: "stdout was closed", quiet: true };
