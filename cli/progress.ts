import { formatCost } from "../actors/pricing.js";
import type { AgentOutput } from "../machines/contract/context.js";
import type { AgentEmitted } from "../machines/contract/events.js";
import type { Usage } from "../actors/usage.js";
import { failureLine, type RunLimits } from "./failure.js";
import { statePath } from "../machines/contract/state-path.js";

type Stream = NodeJS.WritableStream & { isTTY?: boolean };

/** Where the CLI writes: the answer to `out`, everything else to `err`. A seam for tests and --json. */
export interface Terminal {
  out: Stream;
  err: Stream;
  /** Consulted for NO_COLOR. */
  env: Record<string, string | undefined>;
}

/** Colour only on a terminal, and never with NO_COLOR set (https://no-color.org). */
export function colorOn(stream: Stream, env: Record<string, string | undefined>): boolean {
  return stream.isTTY === true && (env["NO_COLOR"] ?? "") === "";
}

const FRAMES = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
const dim = (text: string, color: boolean) => (color ? `\x1b[2m${text}\x1b[22m` : text);
const bold = (text: string, color: boolean) => (color ? `\x1b[1m${text}\x1b[22m` : text);

function oneLine(text: string, max = 160): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** A tool's error without the tool's name repeated ("calculator failed: calculator failed: ..."). */
function toolError(name: string, error: string): string {
  const prefix = `${name} failed: `;
  return error.startsWith(prefix) ? error.slice(prefix.length) : error;
}

/** "N tokens (prompt P (X cached), completion C (R reasoning)), cost K": a detail only when the server reported it. */
export function tokenSummary(usage: Usage): string {
  const cached = usage.cachedPromptTokens !== undefined ? ` (${usage.cachedPromptTokens} cached)` : "";
  const reasoning = usage.reasoningTokens !== undefined ? ` (${usage.reasoningTokens} reasoning)` : "";
  // With config.pricing the cost follows, or says it is unknown (a model without a price).
  const cost = usage.cost === undefined ? "" : `, cost ${usage.cost === null ? "unknown (a model has no price in pricing)" : formatCost(usage.cost)}`;
  return `${usage.totalTokens} tokens (prompt ${usage.promptTokens}${cached}, completion ${usage.completionTokens}${reasoning})${cost}`;
}

/** The innermost state name of a snapshot value, e.g. "AwaitingApproval". */
export function leafState(value: unknown): string {
  return statePath(value).split(".").at(-1) || String(value);
}

/**
 * Human-readable live progress on stderr: the current state and a spinner while the model thinks
 * (on a terminal), each tool call with its arguments, result and duration. The answer alone goes to
 * stdout. Streamed text is shown once: live on stdout when stdout is a terminal (then not repeated),
 * otherwise live on stderr when that is a terminal, and the answer printed once at the end.
 */
export class TextProgress {
  private spinner: ReturnType<typeof setInterval> | undefined;
  private frame = 0;
  private status = "";
  /** The stream the current reply's text (or its reasoning) is being streamed to, if any. */
  private streamingTo: Stream | undefined;
  /** What is streaming there: the answer's text, or the model's reasoning (dimmed, stderr only). */
  private streaming: "text" | "reasoning" = "text";
  /** The current reply's reasoning, kept to print once when stderr is no terminal to stream it to. */
  private reasoning = "";
  /** The text of the latest reply as streamed to stdout. */
  private streamedToOut = "";
  /** stdout carries the answer only, never colour; stderr's progress may be coloured. */
  private readonly errColor: boolean;

  constructor(private readonly term: Terminal) {
    this.errColor = colorOn(term.err, term.env);
  }

  /** A line of progress (tool calls, banners): stderr. */
  line(text: string): void {
    this.stopSpinner();
    this.endStream();
    this.term.err.write(`${text}\n`);
  }

  /** A quieter line (settings, summaries): stderr, dimmed on a terminal. */
  note(text: string): void {
    this.stopSpinner();
    this.endStream();
    this.term.err.write(`${dim(text, this.errColor)}\n`);
  }

  state(value: unknown): void {
    this.status = leafState(value);
    this.renderSpinner();
  }

  event(event: AgentEmitted): void {
    switch (event.type) {
      case "model.call.started":
        this.streamedToOut = "";
        this.reasoning = "";
        this.status = `AgentLLM · ${event.model}${event.attempt > 1 ? ` (attempt ${event.attempt})` : ""}`;
        this.startSpinner();
        break;
      case "model.call.failed":
        this.note(`  model call failed${event.status ? ` (${event.status})` : ""}: ${oneLine(event.message)}${event.willRetry ? " — retrying" : ""}`);
        break;
      case "text.delta":
        this.stream(event.delta);
        break;
      case "reasoning.delta":
        this.think(event.delta);
        break;
      case "reply.completed":
        this.stopSpinner();
        this.endStream();
        if (this.reasoning !== "") this.note(`  reasoning: ${oneLine(this.reasoning)}`);
        this.reasoning = "";
        break;
      case "tool.call.started":
        this.line(`→ ${event.name} ${oneLine(event.arguments || "{}")}`);
        this.status = `Executing · ${event.name}`;
        this.startSpinner();
        break;
      case "tool.call.retrying":
        this.note(`  ${event.name} failed (attempt ${event.attempt} of ${event.attempts}): ${oneLine(toolError(event.name, event.error))} — again in ${event.delayMs} ms`);
        break;
      case "tool.call.completed":
        this.line(`✓ ${event.name} → ${oneLine(event.output)} ${dim(`(${event.durationMs} ms)`, this.errColor)}`);
        break;
      case "tool.call.failed":
        this.line(`✗ ${event.name} failed: ${oneLine(toolError(event.name, event.error))} ${dim(`(${event.durationMs} ms)`, this.errColor)}`);
        break;
      case "tool.call.denied":
        this.line(`⊘ ${event.name} ${event.decision}: ${oneLine(event.reason)}`);
        break;
      case "guard.approval.requested":
        // The approver shows the call (tool, arguments, reason) right before it asks.
        this.stopSpinner();
        this.endStream();
        break;
      // guard.approval.refused: the CLI's approver is the only sender of decisions, and it says
      // itself why an answer was refused, at the prompt (once, not twice).
      default:
        break;
    }
  }

  finish(output: AgentOutput, limits: RunLimits): void {
    this.stopSpinner();
    this.endStream();
    const usage = output.usage;
    const tokens = tokenSummary(usage);
    if (output.status === "succeeded") {
      const answer = output.finalAnswer ?? "";
      // Already on screen when it streamed to a terminal stdout: not twice.
      if (this.streamedToOut.trim() !== answer.trim() || answer === "") this.term.out.write(`${answer}\n`);
      this.note(`── succeeded: ${output.rounds} model replies, ${tokens}`);
    } else {
      this.term.err.write(`${bold(failureLine(output, limits), this.errColor)}\n`);
      this.note(`── failed after ${output.termination?.iterations ?? 0} iterations, ${output.rounds} model replies, ${tokens}`);
    }
  }

  private stream(delta: string): void {
    if (this.streaming === "reasoning") this.endStream();
    if (this.streamingTo === undefined) {
      const target = this.term.out.isTTY === true ? this.term.out : this.term.err.isTTY === true ? this.term.err : undefined;
      if (target === undefined) return;
      this.stopSpinner();
      this.streamingTo = target;
    }
    this.streamingTo.write(delta);
    if (this.streamingTo === this.term.out) this.streamedToOut += delta;
  }

  /**
   * The model's reasoning as it streams: dimmed on stderr when that is a terminal (never on stdout,
   * which carries the answer alone), else one line when the reply completes.
   */
  private think(delta: string): void {
    if (this.term.err.isTTY !== true) {
      this.reasoning += delta;
      return;
    }
    if (this.streamingTo !== undefined && this.streaming !== "reasoning") this.endStream();
    if (this.streamingTo === undefined) {
      this.stopSpinner();
      this.streamingTo = this.term.err;
      this.streaming = "reasoning";
      this.term.err.write(dim("thinking: ", this.errColor));
    }
    this.term.err.write(dim(delta, this.errColor));
  }

  private endStream(): void {
    if (this.streamingTo) this.streamingTo.write("\n");
    this.streamingTo = undefined;
    this.streaming = "text";
  }

  private startSpinner(): void {
    if (this.term.err.isTTY !== true || this.spinner || this.streamingTo) return this.renderSpinner();
    this.spinner = setInterval(() => {
      this.frame = (this.frame + 1) % FRAMES.length;
      this.renderSpinner();
    }, 80);
    this.spinner.unref();
    this.renderSpinner();
  }

  private renderSpinner(): void {
    if (!this.spinner || this.streamingTo) return;
    this.term.err.write(`\r\x1b[K${FRAMES[this.frame]} ${dim(this.status, this.errColor)}`);
  }

  stopSpinner(): void {
    if (!this.spinner) return;
    clearInterval(this.spinner);
    this.spinner = undefined;
    this.term.err.write("\r\x1b[K");
  }
}

/** --json: stdout carries only JSON lines: every emitted event, state changes, then the output. */
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
  finish(output: AgentOutput, limits: RunLimits): void {
    if (output.status === "failed") this.write({ type: "cli.failure", text: failureLine(output, limits) });
    this.write({ type: "output", output });
  }
  stopSpinner(): void {}
}

export type Progress = TextProgress | JsonProgress;
