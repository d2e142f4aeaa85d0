import { context as otelContext, diag, isSpanContextValid, type Context, type Link, type Span, type Tracer } from "@opentelemetry/api";
import type { Actor } from "xstate";
import { secretRedactor } from "../actors/openai/redact.js";
import { pendingApprovals } from "../machines/contract/approvals.js";
import type { AgentContext } from "../machines/contract/context.js";
import type { Message } from "../actors/messages.js";
import { stateAccessOf, type ReactMachine } from "../machines/react-machine.js";
import { rememberTraceLink, traceLinkOf, type TraceLink } from "../machines/persistence/trace-link.js";
import { RunTracer, type TracedEvent } from "./run-tracer.js";
import { ATTR } from "./semconv.js";
import { JianmuError } from "../tools/jianmu-error.js";

export interface TraceAgentOptions {
  /** From `@opentelemetry/api`: `trace.getTracer("my-app")`, or a provider's `getTracer(...)`. */
  tracer: Tracer;
  /**
   * Also record message content: the conversation each model call of the top agent was sent
   * (`gen_ai.input.messages`), the model's text (`gen_ai.output.messages`), tool arguments and results
   * (`gen_ai.tool.call.arguments` / `.result`). Off by default: content is often personal data.
   */
  captureContent?: boolean;
  /** Texts to remove from anything recorded, beside key-shaped text (`sk-…`, `Bearer …`), which always is. */
  secrets?: readonly string[];
  /** The context whose span the run's span is a child of. Default: the active context. */
  parent?: Context;
}

export interface AgentTrace {
  /** The run's `invoke_agent` span in this process. */
  readonly span: Span;
  /** The run's first trace: this span, unless the run was restored from a traced snapshot. */
  readonly firstTrace: TraceLink | undefined;
  /** Stop tracing now: what is still open ends, the run's span marked `jianmu.run.suspended`. */
  stop(): void;
}

export class TraceOptionsError extends JianmuError {
  static override readonly errorCode = "TRACE_OPTIONS_ERROR";
  override name = "TraceOptionsError";
}

function checkOptions(options: TraceAgentOptions): void {
  if (!options || typeof options !== "object") throw new TraceOptionsError("traceAgent: options must be an object: { tracer }");
  if (typeof (options.tracer as { startSpan?: unknown } | undefined)?.startSpan !== "function") {
    throw new TraceOptionsError('traceAgent: options.tracer must be an OpenTelemetry Tracer: pass trace.getTracer("my-app") from @opentelemetry/api');
  }
  if (options.captureContent !== undefined && typeof options.captureContent !== "boolean") {
    throw new TraceOptionsError("traceAgent: options.captureContent must be true or false");
  }
  if (options.secrets !== undefined && (!Array.isArray(options.secrets) || options.secrets.some((s) => typeof s !== "string"))) {
    throw new TraceOptionsError("traceAgent: options.secrets must be an array of strings");
  }
}

/**
 * Trace an agent's run with OpenTelemetry: attach before `actor.start()`. The spans are built from
 * the agent's telemetry events (`actor.on("*")`), so any agent machine can be traced as it is; a
 * nested agent's events, which its parent re-emits with their `agentPath`, nest under the call that
 * started it. A run restored from a traced snapshot links to its first trace, and a snapshot saved
 * with `persistAgent` keeps that link. Like any error observer, it handles an error of the actor
 * itself (the run's span records it).
 */
export function traceAgent(actor: Actor<ReactMachine>, options: TraceAgentOptions): AgentTrace {
  checkOptions(options);
  const snapshot = actor.getSnapshot() as { status: string; context: AgentContext };
  const restored = (actor.options as { snapshot?: unknown }).snapshot !== undefined;
  const carried = traceLinkOf(actor);
  const links: Link[] = carried ? [{ context: { ...carried, isRemote: true }, attributes: { [ATTR.linkKind]: "first_trace" } }] : [];
  const redact = secretRedactor(options.secrets ?? []);
  const tracer = new RunTracer({
    tracer: options.tracer,
    captureContent: options.captureContent === true,
    redact,
    parent: options.parent ?? otelContext.active(),
    agent: actor.logic.id,
    runId: snapshot.context.loop.runId,
    startTime: Date.now(),
    links,
    restored,
    conversation: () => {
      const access = stateAccessOf(actor.logic);
      return access?.read<Message[]>((actor.getSnapshot() as { context: AgentContext }).context.state, "messages");
    },
  });
  const own = tracer.root.span.spanContext();
  const firstTrace = carried ?? (isSpanContextValid(own) ? { traceId: own.traceId, spanId: own.spanId, traceFlags: own.traceFlags } : undefined);
  if (firstTrace) rememberTraceLink(actor, firstTrace);
  if (restored && snapshot.status === "active") {
    for (const request of pendingApprovals(snapshot)) tracer.resumeApproval(request, Date.now());
  }

  // A fault in tracing must never reach the run: it is reported through OpenTelemetry's own logger.
  const safely = (what: string, work: () => void) => {
    try {
      work();
    } catch (error) {
      diag.error(`jianmu/otel: ${what} failed: ${error instanceof Error ? error.message : String(error)}`);
    }
  };
  const listener = actor.on("*", (event) => safely(`tracing ${event.type}`, () => tracer.handle(event as TracedEvent)));
  const subscription = actor.subscribe({
    complete: () =>
      safely("ending the spans", () => {
        const now = actor.getSnapshot() as { status: string; output?: { status?: string } };
        tracer.finish(now.status === "done" ? { kind: "done", at: Date.now(), status: now.output?.status ?? "unknown" } : { kind: "stopped", at: Date.now() });
      }),
    error: (error) => safely("ending the spans", () => tracer.finish({ kind: "error", at: Date.now(), error })),
  });
  return {
    span: tracer.root.span,
    firstTrace,
    stop() {
      listener.unsubscribe();
      subscription.unsubscribe();
      safely("ending the spans", () => tracer.finish({ kind: "stopped", at: Date.now() }));
    },
  };
}
