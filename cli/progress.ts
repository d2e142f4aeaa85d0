import type { AgentOutput } from "../machines/context.js";
import type { AgentEmitted } from "../machines/events.js";

/** Where the CLI writes; a seam for tests and for --json. */
export interface Terminal {
  out: NodeJS.WritableStream & { isTTY?: boolean };
  err: NodeJS.WritableStream & { isTTY?: boolean };
}

const FRAMES = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
const dim = (text: string, color: boolean) => (color ? `\x1b[2m${text}\x1b[22m` : text);
const bold = (text: string, color: boolean) => (color ? `\x1b[1m${text}\x1b[22m` : text);

function oneLine(text: string, max = 160): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** The innermost state name of a snapshot value, e.g. "AwaitingApproval". */
export function leafState(value: unknown): string {
  let node = value;
  const path: string[] = [];
  while (node !== null && typeof node === "object") {
    const [key, child] = Object.entries(node as Record<string, unknown>)[0] ?? [];
    if (key === undefined) break;
    path.push(key);
    node = child;
  }
  if (typeof node === "string") path.push(node);
  return path.at(-1) ?? String(value);
}

/**
 * Human-readable live progress: the current state and a spinner while the model thinks (on a
 * terminal), streamed text as it arrives, each tool call with its arguments, result and duration.
 */
export class TextProgress {
  private spinner: ReturnType<typeof setInterval> | undefined;
  private frame = 0;
  private status = "";
  private streaming = false;
  private readonly tty: boolean;

  constructor(private readonly term: Terminal) {
    this.tty = term.err.isTTY === true;
  }

  line(text: string): void {
    this.clearSpinner();
    this.endStream();
    this.term.out.write(`${text}\n`);
  }

  note(text: string): void {
    this.clearSpinner();
    this.endStream();
    this.term.err.write(`${dim(text, this.tty)}\n`);
  }

  state(value: unknown): void {
    this.status = leafState(value);
    this.renderSpinner();
  }

  event(event: AgentEmitted): void {
    switch (event.type) {
      case "model.call.started":
        this.status = `AgentLLM · ${event.model}${event.attempt > 1 ? ` (attempt ${event.attempt})` : ""}`;
        this.startSpinner();
        break;
      case "model.call.failed":
        this.note(`  model call failed${event.status ? ` (${event.status})` : ""}: ${oneLine(event.message)}${event.willRetry ? " — retrying" : ""}`);
        break;
      case "text.delta":
        this.clearSpinner();
        this.streaming = true;
        this.term.out.write(event.delta);
        break;
      case "reply.completed":
        this.stopSpinner();
        this.endStream();
        break;
      case "tool.call.started":
        this.line(`→ ${event.name} ${oneLine(event.arguments || "{}")}`);
        this.status = `Executing · ${event.name}`;
        this.startSpinner();
        break;
      case "tool.call.completed":
        this.stopSpinner();
        this.line(`✓ ${event.name} → ${oneLine(event.output)} ${dim(`(${event.durationMs} ms)`, this.tty)}`);
        break;
      case "tool.call.failed":
        this.stopSpinner();
        this.line(`✗ ${event.name} failed: ${oneLine(event.error)} ${dim(`(${event.durationMs} ms)`, this.tty)}`);
        break;
      case "tool.call.denied":
        this.line(`⊘ ${event.name} ${event.decision}: ${oneLine(event.reason)}`);
        break;
      case "guard.approval.requested":
        this.stopSpinner();
        this.line(`? ${event.name} ${oneLine(event.arguments || "{}")} needs approval${event.reason ? `: ${event.reason}` : ""}`);
        break;
      case "guard.approval.refused":
        this.note(`  ${event.reason}`);
        break;
      default:
        break;
    }
  }

  finish(output: AgentOutput): void {
    this.stopSpinner();
    this.endStream();
    const usage = output.usage;
    const tokens = `${usage.totalTokens} tokens (prompt ${usage.promptTokens}, completion ${usage.completionTokens})`;
    if (output.status === "succeeded") {
      this.term.out.write(`\n${bold("Answer:", this.tty)}\n${output.finalAnswer ?? ""}\n`);
      this.note(`── succeeded: ${output.rounds} model replies, ${tokens}`);
    } else {
      const t = output.termination!;
      const why = t.error ? `: ${t.error.message}` : t.detail ? `: ${t.detail}` : "";
      this.term.err.write(`${bold(`Agent failed (${t.reason})`, this.tty)}${why}\n`);
      this.note(`── failed after ${t.iterations} iterations, ${output.rounds} model replies, ${tokens}`);
    }
  }

  private startSpinner(): void {
    if (!this.tty || this.spinner) return this.renderSpinner();
    this.spinner = setInterval(() => {
      this.frame = (this.frame + 1) % FRAMES.length;
      this.renderSpinner();
    }, 80);
    this.spinner.unref();
    this.renderSpinner();
  }

  private renderSpinner(): void {
    if (!this.tty || !this.spinner || this.streaming) return;
    this.term.err.write(`\r\x1b[K${FRAMES[this.frame]} ${dim(this.status, true)}`);
  }

  private clearSpinner(): void {
    if (this.tty && this.spinner) this.term.err.write("\r\x1b[K");
  }

  stopSpinner(): void {
    this.clearSpinner();
    if (this.spinner) clearInterval(this.spinner);
    this.spinner = undefined;
  }

  private endStream(): void {
    if (this.streaming) this.term.out.write("\n");
    this.streaming = false;
  }
}

/** --json: one JSON object per line: every emitted event, state changes, then the output. */
export class JsonProgress {
  constructor(private readonly term: Terminal) {}
  private write(value: unknown) {
    this.term.out.write(`${JSON.stringify(value)}\n`);
  }
  line(text: string): void {
    this.write({ type: "cli.message", text });
  }
  note(text: string): void {
    this.write({ type: "cli.note", text });
  }
  state(value: unknown): void {
    this.write({ type: "state", value });
  }
  event(event: AgentEmitted): void {
    this.write(event);
  }
  finish(output: AgentOutput): void {
    this.write({ type: "output", output });
  }
  stopSpinner(): void {}
}

export type Progress = TextProgress | JsonProgress;
