import { SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Link, type Span, type Tracer } from "@opentelemetry/api";
import type { AgentEmitted, AgentPath } from "../machines/contract/events.js";
import type { Message } from "../actors/messages.js";
import type { Usage } from "../actors/usage.js";
import type { PendingApproval } from "../machines/contract/approvals.js";
import { inputMessages, outputMessages } from "./content.js";
import { ATTR, AWAITING_APPROVAL, OPERATION, PROVIDER, type ApprovalSpanDecision, type ToolSpanStatus } from "./semconv.js";

/** One level of a nested agent: its name and the tool call (in the level above) that started it. */
export type AgentPathEntry = AgentPath[number];

/** A telemetry event as the tracer reads it: a nested agent's events carry their `agentPath`, outermost first. */
export type TracedEvent = AgentEmitted;

export interface RunTracerOptions {
  tracer: Tracer;
  /** Record message content (model text, tool arguments and results, approval arguments). */
  captureContent: boolean;
  /** With content: the top agent's conversation now (its nested agents' are out of reach). */
  conversation?: () => readonly Message[] | undefined;
  /** Applied to every text that leaves for the span: error messages, reasons, content. */
  redact: (text: string) => string;
  /** The context the run's `invoke_agent` span is a child of (the caller's active span, or none). */
  parent: Context;
  /** The root agent and its run. */
  agent: string;
  runId: string;
  startTime: number;
  /** Links of the run's span: a restored run's link to its first trace. */
  links: Link[];
  restored: boolean;
}

/** How the spans still open end when the run stops without finishing. */
export type Finish =
  | { kind: "stopped"; at: number }
  | { kind: "error"; at: number; error: unknown }
  /** Done without a `loop.terminated` seen here (restored from a finished snapshot). */
  | { kind: "done"; at: number; status: string };

interface OpenChat {
  span: Span;
  text: string;
}

/**
 * Turns one run's telemetry events into spans, following the GenAI semantic conventions:
 * `invoke_agent {agent}` for the run and for each nested agent (a child of the `execute_tool` span of
 * the call that started it), `chat {model}` for each model call attempt, `execute_tool {name}` for
 * each tool call and `awaiting_approval` for each call waiting on a person. Times are the events'
 * own timestamps (when it happened, not when the batched telemetry arrived).
 */
export class RunTracer {
  readonly root: AgentScope;

  constructor(private readonly options: RunTracerOptions) {
    const attributes: Attributes = {
      [ATTR.operationName]: OPERATION.invokeAgent,
      [ATTR.agentName]: options.agent,
      [ATTR.runId]: options.runId,
      [ATTR.agentPath]: [options.agent],
    };
    if (options.restored) attributes[ATTR.runRestored] = true;
    const span = options.tracer.startSpan(
      `${OPERATION.invokeAgent} ${options.agent}`,
      { kind: SpanKind.INTERNAL, attributes, startTime: options.startTime, links: options.links },
      options.parent,
    );
    this.root = new AgentScope(this.options, span, trace.setSpan(options.parent, span), [], [options.agent]);
  }

  handle(event: TracedEvent): void {
    this.scopeFor(event).handle(event);
  }

  /**
   * A restored run already waiting: its requests were emitted in the process that saved it. A
   * nested agent's call (marked with its `agentPath`) opens its agent's spans down to it.
   */
  resumeApproval(request: PendingApproval, at: number): void {
    this.scopeAt(request.agentPath ?? [], at).openApproval(request, at);
  }

  /** End whatever is still open (the actor stopped, e.g. to be persisted, or failed). */
  finish(how: Finish): void {
    this.root.finish(how);
  }

  private scopeFor(event: TracedEvent): AgentScope {
    return this.scopeAt(event.agentPath ?? [], event.timestamp);
  }

  private scopeAt(path: readonly AgentPathEntry[], at: number): AgentScope {
    let scope = this.root;
    for (const step of path) scope = scope.child(step, at);
    return scope;
  }
}

/** The spans of one agent (the run's, or a nested agent's) that are open now. */
class AgentScope {
  private chat: OpenChat | undefined;
  private round: { round: number; at: number; modelCalls: number; input?: string } | undefined;
  private readonly tools = new Map<string, Span>();
  private readonly approvals = new Map<string, Span>();
  private readonly children = new Map<string, AgentScope>();
  /** Handoff calls: their spans end with the agent, and say so. */
  private readonly handedOff = new Set<string>();
  private lastError: { type: string; message: string } | undefined;
  private ended = false;
  private runIdKnown: boolean;

  constructor(
    private readonly options: RunTracerOptions,
    readonly span: Span,
    private readonly context: Context,
    private readonly path: readonly AgentPathEntry[],
    private readonly names: readonly string[],
  ) {
    this.runIdKnown = path.length === 0;
  }

  /** The nested agent started by `step.callId`, under that call's `execute_tool` span. */
  child(step: AgentPathEntry, at: number): AgentScope {
    const known = this.children.get(step.callId);
    if (known) return known;
    // The nested agent's first event can arrive before the call's own `tool.call.started` (progress
    // is batched, and a restored parent never re-emits it): open the call's span now, named later.
    const toolSpan = this.tools.get(step.callId) ?? this.openTool(step.callId, undefined, at);
    const names = [...this.names, step.agent];
    const span = this.options.tracer.startSpan(
      `${OPERATION.invokeAgent} ${step.agent}`,
      {
        kind: SpanKind.INTERNAL,
        startTime: at,
        attributes: { [ATTR.operationName]: OPERATION.invokeAgent, [ATTR.agentName]: step.agent, [ATTR.agentPath]: names, [ATTR.toolCallId]: step.callId },
      },
      trace.setSpan(this.context, toolSpan),
    );
    const scope = new AgentScope(this.options, span, trace.setSpan(this.context, span), [...this.path, step], names);
    this.children.set(step.callId, scope);
    return scope;
  }

  handle(event: TracedEvent): void {
    if (!this.runIdKnown) {
      // A nested agent's run id arrives with its first event.
      this.span.setAttribute(ATTR.runId, event.runId);
      this.runIdKnown = true;
    }
    switch (event.type) {
      case "reply.started": {
        this.round = { round: event.round, at: event.timestamp, modelCalls: 0 };
        // Emitted events are delivered once the snapshot is updated: the conversation is this round's.
        const conversation = this.options.captureContent && this.path.length === 0 ? this.options.conversation?.() : undefined;
        if (conversation) this.round.input = inputMessages(conversation, this.options.redact);
        return;
      }
      case "model.call.started":
        this.endChat(event.timestamp);
        if (this.round) this.round.modelCalls += 1;
        this.chat = { span: this.startChat(event.model, event.endpoint, event.attempt, event.timestamp), text: "" };
        return;
      case "text.delta":
        if (this.options.captureContent && this.chat) this.chat.text += event.delta;
        return;
      case "model.call.completed": {
        const chat = this.takeChat(event.model, event.endpoint, event.attempt, event.timestamp - event.durationMs);
        chat.span.setAttributes({ [ATTR.responseModel]: event.model, ...usageAttributes(event.usage) });
        if (event.finishReason !== null) chat.span.setAttribute(ATTR.finishReasons, [event.finishReason]);
        if (this.options.captureContent) chat.span.setAttribute(ATTR.outputMessages, outputMessages(this.options.redact(chat.text), event.finishReason));
        chat.span.end(event.timestamp);
        return;
      }
      case "model.call.failed": {
        const chat = this.takeChat(event.model, event.endpoint, event.attempt, event.timestamp - event.durationMs);
        // Of the server's error code, the status and the client's error kind, the most specific
        // low-cardinality one is the error type.
        const type = event.code ?? (event.status !== undefined ? String(event.status) : (event.kind ?? "model_error"));
        const message = this.options.redact(event.message);
        chat.span.setAttributes({ [ATTR.errorType]: type, [ATTR.willRetry]: event.willRetry });
        failSpan(chat.span, type, message, event.timestamp);
        chat.span.end(event.timestamp);
        if (!event.willRetry) this.lastError = { type, message };
        return;
      }
      case "reply.completed":
        // A model client that reports no call progress still gets its chat span, from the round's start.
        if (this.round && this.round.modelCalls === 0) {
          const span = this.startChat(event.model, undefined, undefined, this.round.at);
          span.setAttributes({ [ATTR.responseModel]: event.model, ...usageAttributes(event.usage) });
          if (event.finishReason !== null) span.setAttribute(ATTR.finishReasons, [event.finishReason]);
          span.end(event.timestamp);
        }
        this.round = undefined;
        return;
      case "tool.call.started": {
        const span = this.tools.get(event.callId);
        if (span) this.nameTool(span, event.name);
        else this.openTool(event.callId, event.name, event.timestamp);
        if (this.options.captureContent) this.tools.get(event.callId)!.setAttribute(ATTR.toolCallArguments, this.options.redact(event.arguments));
        return;
      }
      case "tool.call.retrying": {
        // The call goes on: its span stays open, and says which attempt failed, how, and when the next begins.
        const span = this.tools.get(event.callId) ?? this.openTool(event.callId, event.name, event.timestamp);
        span.addEvent(
          event.type,
          { [ATTR.toolAttempt]: event.attempt, [ATTR.toolAttempts]: event.attempts, [ATTR.toolRetryDelay]: event.delayMs, [ATTR.errorType]: event.errorKind, [ATTR.toolError]: this.options.redact(event.error) },
          event.timestamp,
        );
        return;
      }
      case "tool.call.completed": {
        const span = this.takeTool(event.callId, event.name, event.timestamp - event.durationMs);
        span.setAttribute(ATTR.toolStatus, "completed" satisfies ToolSpanStatus);
        if (this.options.captureContent) span.setAttribute(ATTR.toolCallResult, this.options.redact(event.output));
        this.endChild(event.callId, event.timestamp);
        span.end(event.timestamp);
        return;
      }
      case "tool.call.failed": {
        const span = this.takeTool(event.callId, event.name, event.timestamp - event.durationMs);
        span.setAttributes({ [ATTR.toolStatus]: "failed" satisfies ToolSpanStatus, [ATTR.errorType]: event.errorKind });
        failSpan(span, event.errorKind, this.options.redact(event.error), event.timestamp);
        this.endChild(event.callId, event.timestamp);
        span.end(event.timestamp);
        return;
      }
      case "tool.call.denied": {
        // Never ran: a span of no length that says why, so the trace shows every call the model made.
        const span = this.takeTool(event.callId, event.name, event.timestamp);
        span.setAttributes({ [ATTR.toolStatus]: event.decision satisfies ToolSpanStatus, [ATTR.toolReason]: this.options.redact(event.reason) });
        this.endChild(event.callId, event.timestamp);
        span.end(event.timestamp);
        return;
      }
      case "guard.approval.requested":
        this.openApproval(event, event.timestamp);
        return;
      case "guard.approval.decided": {
        const span = this.approvals.get(event.callId);
        if (!span) return;
        this.approvals.delete(event.callId);
        span.setAttributes({ [ATTR.approvalDecision]: event.decision satisfies ApprovalSpanDecision, [ATTR.approvalEdited]: event.edited });
        if (event.reason !== undefined) span.setAttribute(ATTR.approvalReason, this.options.redact(event.reason));
        span.end(event.timestamp);
        return;
      }
      case "guard.approval.refused":
        (this.approvals.get(event.callId) ?? this.span).addEvent("approval refused", { [ATTR.toolCallId]: event.callId, [ATTR.approvalReason]: this.options.redact(event.reason) }, event.timestamp);
        return;
      case "agent.handoff": {
        // The conversation moves on in another agent, whose spans nest under the handoff call's span;
        // that call has no result of its own, so its span lasts until this agent ends.
        const span = this.tools.get(event.callId) ?? this.openTool(event.callId, undefined, event.timestamp);
        this.nameTool(span, event.name);
        span.setAttribute(ATTR.toolStatus, "handoff" satisfies ToolSpanStatus);
        this.handedOff.add(event.callId);
        this.span.addEvent("agent.handoff", { [ATTR.toolCallId]: event.callId, [ATTR.toolName]: event.name, [ATTR.handoffFrom]: event.from, [ATTR.handoffTo]: event.to }, event.timestamp);
        return;
      }
      case "guardrail.tripped":
      case "guardrail.retried": {
        const why = event.type === "guardrail.tripped" ? event.reason : event.feedback;
        const attributes = { [ATTR.guardrailName]: event.guardrail, [ATTR.guardrailStage]: event.stage, [ATTR.guardrailReason]: this.options.redact(why) };
        this.span.addEvent(event.type, attributes, event.timestamp);
        return;
      }
      case "loop.terminated":
        this.endOpen(event.timestamp, "unfinished");
        this.span.setAttributes({ [ATTR.runStatus]: event.status, [ATTR.runRounds]: event.rounds, ...usageAttributes(event.usage) });
        if (event.status === "failed") {
          const reason = event.reason ?? "internalError";
          this.span.setAttribute(ATTR.errorType, reason);
          failSpan(this.span, reason, this.lastError && reason === "modelError" ? this.lastError.message : `the run failed: ${reason}`, event.timestamp);
        }
        this.endSelf(event.timestamp);
        return;
    }
  }

  openApproval(request: PendingApproval, at: number): void {
    if (this.approvals.has(request.callId)) return;
    const attributes: Attributes = { [ATTR.toolName]: request.name, [ATTR.toolCallId]: request.callId };
    if (request.reason !== undefined) attributes[ATTR.approvalReason] = this.options.redact(request.reason);
    if (request.deadline !== undefined) attributes[ATTR.approvalDeadline] = request.deadline;
    if (this.options.captureContent) attributes[ATTR.toolCallArguments] = this.options.redact(request.arguments);
    this.approvals.set(request.callId, this.options.tracer.startSpan(AWAITING_APPROVAL, { kind: SpanKind.INTERNAL, startTime: at, attributes }, this.context));
  }

  finish(how: Finish): void {
    if (this.ended) return;
    this.endOpen(how.at, "unfinished");
    if (how.kind === "stopped") {
      this.span.setAttribute(ATTR.runSuspended, true);
    } else if (how.kind === "done") {
      this.span.setAttribute(ATTR.runStatus, how.status);
    } else {
      const error = how.error instanceof Error ? how.error : new Error(String(how.error));
      this.span.setAttribute(ATTR.errorType, error.name);
      failSpan(this.span, error.name, this.options.redact(error.message), how.at);
    }
    this.endSelf(how.at);
  }

  private startChat(model: string, endpoint: string | undefined, attempt: number | undefined, at: number): Span {
    const attributes: Attributes = {
      [ATTR.operationName]: OPERATION.chat,
      [ATTR.providerName]: PROVIDER,
      [ATTR.requestModel]: model,
    };
    if (attempt !== undefined) attributes[ATTR.attempt] = attempt;
    if (this.round) attributes[ATTR.round] = this.round.round;
    if (this.round?.input !== undefined) attributes[ATTR.inputMessages] = this.round.input;
    Object.assign(attributes, serverOf(endpoint));
    return this.options.tracer.startSpan(`${OPERATION.chat} ${model}`, { kind: SpanKind.CLIENT, startTime: at, attributes }, this.context);
  }

  /** The open chat span, or one opened now for a call whose start was not seen (a restored run). */
  private takeChat(model: string, endpoint: string, attempt: number, startedAt: number): OpenChat {
    const chat = this.chat ?? { span: this.startChat(model, endpoint, attempt, startedAt), text: "" };
    this.chat = undefined;
    return chat;
  }

  private endChat(at: number): void {
    if (!this.chat) return;
    this.chat.span.end(at);
    this.chat = undefined;
  }

  private openTool(callId: string, name: string | undefined, at: number): Span {
    const span = this.options.tracer.startSpan(
      OPERATION.executeTool,
      { kind: SpanKind.INTERNAL, startTime: at, attributes: { [ATTR.operationName]: OPERATION.executeTool, [ATTR.toolCallId]: callId, [ATTR.toolType]: "function" } },
      this.context,
    );
    if (name !== undefined) this.nameTool(span, name);
    this.tools.set(callId, span);
    return span;
  }

  private nameTool(span: Span, name: string): void {
    span.updateName(`${OPERATION.executeTool} ${name}`);
    span.setAttribute(ATTR.toolName, name);
  }

  /** The call's open span (named now if a nested agent opened it), or one opened at `startedAt`. */
  private takeTool(callId: string, name: string, startedAt: number): Span {
    const span = this.tools.get(callId) ?? this.openTool(callId, undefined, startedAt);
    this.nameTool(span, name);
    this.tools.delete(callId);
    return span;
  }

  private endChild(callId: string, at: number): void {
    this.children.get(callId)?.finishQuietly(at);
  }

  /** A nested agent whose own end was not reported (its call ended first): end its spans with the call. */
  private finishQuietly(at: number): void {
    if (this.ended) return;
    this.endOpen(at, "unfinished");
    this.endSelf(at);
  }

  private endOpen(at: number, status: ToolSpanStatus): void {
    for (const child of this.children.values()) child.finishQuietly(at);
    this.endChat(at);
    for (const span of this.approvals.values()) {
      span.setAttribute(ATTR.approvalDecision, "undecided" satisfies ApprovalSpanDecision);
      span.end(at);
    }
    this.approvals.clear();
    for (const [callId, span] of this.tools) {
      if (!this.handedOff.has(callId)) span.setAttribute(ATTR.toolStatus, status);
      span.end(at);
    }
    this.tools.clear();
  }

  private endSelf(at: number): void {
    if (this.ended) return;
    this.ended = true;
    this.span.end(at);
  }
}

/** Status ERROR with the message, and the exception event the conventions ask for. */
/** The GenAI usage attributes of a call or a run; a detail the server did not report is left out, not set to 0. */
function usageAttributes(usage: Usage): Attributes {
  const attributes: Attributes = { [ATTR.inputTokens]: usage.promptTokens, [ATTR.outputTokens]: usage.completionTokens };
  if (usage.cachedPromptTokens !== undefined) attributes[ATTR.cacheReadInputTokens] = usage.cachedPromptTokens;
  if (usage.reasoningTokens !== undefined) attributes[ATTR.reasoningOutputTokens] = usage.reasoningTokens;
  // The cost when it is known (an attribute cannot say "unknown": it is left out).
  if (typeof usage.cost === "number") attributes[ATTR.cost] = usage.cost;
  return attributes;
}

function failSpan(span: Span, type: string, message: string, at: number): void {
  span.recordException({ name: type, message }, at);
  span.setStatus({ code: SpanStatusCode.ERROR, message });
}

/** `server.address` / `server.port` of an endpoint URL (it never holds credentials: see publicEndpoint). */
function serverOf(endpoint: string | undefined): Attributes {
  if (endpoint === undefined) return {};
  try {
    const url = new URL(endpoint);
    const port = url.port !== "" ? Number(url.port) : url.protocol === "https:" ? 443 : 80;
    return { [ATTR.serverAddress]: url.hostname, [ATTR.serverPort]: port };
  } catch {
    return {};
  }
}
