import { activeStateIds, allStates, type Chart, type ChartTransition } from "./chart.js";
import { applyDiff } from "./context-diff.js";
import { isPlainObject, type Plain } from "./plain.js";
import { parentsOf, readRecording } from "./recording-reader.js";
import type { EmitLine, MicrostepLine, RecordingHeader, SnapshotLine } from "./recording-format.js";

/** Everything the viewer shows, computed from a recording in one streaming pass. */
export interface RunAnalysis {
  header: RecordingHeader;
  chart: Chart;
  /** How often each state was entered, by state id (eventless steps included). */
  visits: Record<string, number>;
  /** How often each chart transition was taken, by transition id. */
  transitions: Record<string, number>;
  /**
   * The atomic states entered, in order: the path the run took. `via` is the event type of the
   * transition that entered it ("always" for eventless ones); `macro` numbers the event the machine
   * was processing, so a state entered and left within one macrostep was only passed through.
   */
  steps: { state: string; t: number; via: string; macro: number }[];
  timeline: TimelineEntry[];
  /** Instant events worth a mark on the timeline (denied calls, refused approvals, model retries). */
  markers: TimelineMarker[];
  iterations: { iteration: number; start: number; end: number }[];
  messages: Message[];
  summary: RunSummary;
  /** Agents that ran nested in this one (agentTool, handoff), one per agentPath, in order of appearance. */
  nestedAgents: NestedAgentSummary[];
  nestedActors: NestedActor[];
}

/** A nested agent as its re-emitted telemetry and its actor tell it. */
export interface NestedAgentSummary {
  /** Outermost first, as in the events' `agentPath`. */
  path: { agent: string; callId: string }[];
  /** e.g. "Writer (call r1) › Helper (call w2)". */
  label: string;
  status: string;
  reason?: string;
  modelCalls: number;
  toolCalls: number;
  usage?: RunSummary["usage"];
}

/** A nested agent's actor as the recording saw it: a child machine of the agent that called it. */
export interface NestedActor {
  /** e.g. `Researcher.agent`. */
  id: string;
  /** `agent.<tool name>`. */
  src: string;
  /** The id of the actor that runs it (the root's session id for the top agent). */
  parent: string;
}

export type TimelineKind = "model" | "tool" | "approval";

export interface TimelineEntry {
  kind: TimelineKind;
  /** Set for calls of a nested agent: its path label (see NestedAgentSummary.label). */
  agent?: string;
  /** Unique within the run: the call id for tools and approvals, `model-N` for model calls. */
  id: string;
  /** Tool name, or the model name. */
  name: string;
  /** Milliseconds since the recording started. */
  start: number;
  end: number;
  durationMs: number;
  status: "ok" | "failed" | "retried" | "approved" | "rejected" | "unfinished";
  iteration: number;
  round?: number;
  attempt?: number;
  /** `cost`: with `config.pricing`, in its units (`null`: the model has no price). */
  tokens?: RunSummary["usage"];
  /** Tool arguments, output or error; the approval's reason; the model's finish reason. */
  detail?: string;
  /** A model call's reasoning as it streamed (`reasoning.delta`). */
  reasoning?: string;
}

export interface TimelineMarker {
  kind: "denied" | "refused" | "handoff" | "guardrail";
  t: number;
  name: string;
  detail: string;
}

export interface Message {
  role: string;
  /** The text (of a content given as parts: its text parts, joined). */
  content: string | null;
  /** A content given as parts (text, images, files), as the recording holds it. */
  parts?: ViewerPart[];
  name?: string;
  toolCallId?: string;
  isError?: boolean;
  toolCalls?: { id: string; name: string; arguments: string }[];
  /** An assistant message's reasoning items' summaries (what a reasoning model said of its reasoning). */
  reasoning?: string;
}

export interface RunSummary {
  agent: string;
  runId?: string;
  /** "succeeded" / "failed" from the run's end, "done"/"error"/"stopped" from the actor, or "unfinished". */
  status: string;
  reason?: string;
  rounds: number;
  iterations: number;
  /** `cost` only with `config.pricing`: in its units, `null` when a model had no price. */
  usage: { promptTokens: number; completionTokens: number; totalTokens: number; reasoningTokens?: number; cachedPromptTokens?: number; cost?: number | null };
  durationMs: number;
  modelCalls: number;
  toolCalls: number;
  approvals: number;
  finalAnswer?: string;
  /** Emitted events by type. */
  events: Record<string, number>;
  /**
   * False when the recording holds no telemetry: a stored run drawn from its checkpoint
   * (`jianmu view --store`). Status, rounds, iterations, usage and tool calls then come from the
   * run's output and messages; its duration, model calls and approvals are not known.
   */
  telemetry: boolean;
}

const num = (value: unknown, fallback = 0) => (typeof value === "number" && Number.isFinite(value) ? value : fallback);
const str = (value: unknown) => (typeof value === "string" ? value : undefined);

function usageOf(value: unknown): RunSummary["usage"] | undefined {
  if (!isPlainObject(value as Plain)) return undefined;
  const u = value as Record<string, unknown>;
  const usage: RunSummary["usage"] = { promptTokens: num(u["promptTokens"]), completionTokens: num(u["completionTokens"]), totalTokens: num(u["totalTokens"]) };
  if (typeof u["reasoningTokens"] === "number") usage.reasoningTokens = num(u["reasoningTokens"]);
  if (typeof u["cachedPromptTokens"] === "number") usage.cachedPromptTokens = num(u["cachedPromptTokens"]);
  if (u["cost"] === null || (typeof u["cost"] === "number" && Number.isFinite(u["cost"]))) usage.cost = u["cost"];
  return usage;
}

const ROLES = new Set(["system", "user", "assistant", "tool"]);
const isMessageList = (value: unknown): value is Plain[] =>
  Array.isArray(value) && value.length > 0 && value.every((m) => isPlainObject(m) && typeof m["role"] === "string" && ROLES.has(m["role"]));

/** The conversation inside a context: the `messages` array, wherever the state keys put it. */
/** The first field of this name within a few levels of the context (the agent's fields, under its namespace). */
function findField(context: Plain | undefined, name: string): Plain | undefined {
  const queue: { node: Plain; depth: number }[] = context === undefined ? [] : [{ node: context, depth: 0 }];
  for (let item = queue.shift(); item; item = queue.shift()) {
    if (!isPlainObject(item.node) || item.depth > 5) continue;
    if (name in item.node) return item.node[name];
    for (const child of Object.values(item.node)) queue.push({ node: child, depth: item.depth + 1 });
  }
  return undefined;
}

function findMessages(context: Plain | undefined): Plain[] {
  let found: Plain[] | undefined;
  const visit = (node: Plain | undefined, depth: number) => {
    if (found || depth > 5 || node === undefined) return;
    if (isMessageList(node)) {
      found = node;
      return;
    }
    if (isPlainObject(node)) {
      // Prefer a field literally called "messages", then look deeper.
      const direct = node["messages"];
      if (isMessageList(direct)) {
        found = direct;
        return;
      }
      for (const child of Object.values(node)) visit(child, depth + 1);
    }
  };
  visit(context, 0);
  return found ?? [];
}

/**
 * What a run without telemetry still tells: its output (a finished run) or its loop (a waiting one),
 * and its messages. The figures only telemetry gives (durations, model calls, approvals) stay 0 and
 * the page says they are unknown.
 */
function figuresWithoutTelemetry(output: Record<string, unknown> | undefined, context: Plain | undefined, messages: Message[]): Partial<RunSummary> {
  const loop = isPlainObject(context) && isPlainObject(context["loop"]) ? context["loop"] : undefined;
  const termination = isPlainObject(output?.["termination"] as Plain) ? (output!["termination"] as Record<string, unknown>) : undefined;
  const figures: Partial<RunSummary> = {
    toolCalls: messages.filter((m) => m.role === "tool").length,
    rounds: num(output?.["rounds"], messages.filter((m) => m.role === "assistant").length),
    iterations: num(output?.["iterations"], num(loop?.["iteration"])),
  };
  const status = str(output?.["status"]);
  if (status !== undefined) figures.status = status;
  const usage = usageOf(output?.["usage"]) ?? usageOf(findField(context, "usage"));
  if (usage) figures.usage = usage;
  const reason = str(termination?.["reason"]);
  if (reason !== undefined) figures.reason = reason;
  if (str(output?.["runId"]) !== undefined) figures.runId = str(output?.["runId"])!;
  else if (str(loop?.["runId"]) !== undefined) figures.runId = str(loop?.["runId"])!;
  return figures;
}

/** One part of a message as the viewer shows it: read leniently from the recording's JSON. */
export type ViewerPart =
  | { type: "text"; text: string }
  | { type: "image" | "file"; mediaType?: string; data?: string; url?: string; blob?: string; filename?: string };

function toParts(content: Plain[]): ViewerPart[] {
  return content.filter(isPlainObject).map((raw): ViewerPart => {
    const part = raw as Record<string, Plain>;
    if (part["type"] !== "image" && part["type"] !== "file") return { type: "text", text: str(part["text"]) ?? "" };
    const out: ViewerPart = { type: part["type"] };
    for (const key of ["mediaType", "data", "url", "blob", "filename"] as const) {
      const value = str(part[key]);
      if (value !== undefined) out[key] = value;
    }
    return out;
  });
}

function toMessage(raw: Plain): Message {
  const m = raw as Record<string, Plain>;
  const content = m["content"];
  const parts = Array.isArray(content) ? toParts(content) : undefined;
  const text = parts ? parts.flatMap((part) => (part.type === "text" ? [part.text] : [])).join("\n") : typeof content === "string" ? content : null;
  const message: Message = { role: String(m["role"]), content: text };
  if (parts) message.parts = parts;
  if (typeof m["name"] === "string") message.name = m["name"];
  if (typeof m["toolCallId"] === "string") message.toolCallId = m["toolCallId"];
  if (m["isError"] === true) message.isError = true;
  if (Array.isArray(m["toolCalls"])) {
    message.toolCalls = m["toolCalls"].filter(isPlainObject).map((c) => ({ id: String(c["id"] ?? ""), name: String(c["name"] ?? ""), arguments: String(c["arguments"] ?? "") }));
  }
  const reasoning = reasoningSummary(m["reasoningItems"]);
  if (reasoning !== "") message.reasoning = reasoning;
  return message;
}

/** The summaries of a message's reasoning items, one paragraph each (a redacted recording has none). */
function reasoningSummary(value: Plain | undefined): string {
  if (!isPlainObject(value) || !Array.isArray(value["items"])) return "";
  const parts: string[] = [];
  for (const item of value["items"]) if (isPlainObject(item) && Array.isArray(item["summary"])) for (const part of item["summary"]) if (typeof part === "string" && part !== "") parts.push(part);
  return parts.join("\n\n");
}

/** Tracks the root machine's configuration and counts entries and transitions. */
class VisitCounter {
  readonly visits: Record<string, number> = {};
  readonly transitions: Record<string, number> = {};
  readonly steps: RunAnalysis["steps"] = [];
  private active = new Set<string>();
  /** Incremented for every event the root machine receives. */
  macro = 0;
  private readonly parent = new Map<string, string>();
  private readonly atomic = new Set<string>();
  private readonly byShape = new Map<string, ChartTransition>();

  constructor(private readonly chart: Chart) {
    for (const state of allStates(chart)) {
      for (const child of state.children) this.parent.set(child.id, state.id);
      if (state.children.length === 0) this.atomic.add(state.id);
    }
    for (const t of chart.transitions) this.byShape.set(`${t.source}|${t.event}|${t.targets.join(",")}`, t);
  }

  private within(id: string, ancestor: string): boolean {
    for (let s: string | undefined = id; s !== undefined; s = this.parent.get(s)) if (s === ancestor) return true;
    return false;
  }

  private enter(ids: Iterable<string>, t: number, via: string): void {
    for (const id of ids) {
      this.visits[id] = (this.visits[id] ?? 0) + 1;
      if (this.atomic.has(id)) this.steps.push({ state: id, t, via, macro: this.macro });
    }
  }

  microstep(line: MicrostepLine): void {
    for (const t of line.transitions) {
      const id = t.id ?? this.byShape.get(`${t.source}|${t.event}|${t.targets.join(",")}`)?.id;
      if (id !== undefined) this.transitions[id] = (this.transitions[id] ?? 0) + 1;
      // A source never seen active was entered before recording began (e.g. an initial state
      // left by an eventless transition during start-up): count that entry too.
      if (!this.active.has(t.source)) {
        const missed: string[] = [];
        for (let s: string | undefined = t.source; s !== undefined && !this.active.has(s); s = this.parent.get(s)) missed.unshift(s);
        this.enter(missed, line.t, "start");
        missed.forEach((s) => this.active.add(s));
      }
    }
    const reentered = line.transitions.filter((t) => t.reenter).flatMap((t) => t.targets);
    const via = line.transitions.map((t) => t.event).find((e) => e !== undefined) ?? line.eventType;
    this.configure(line.value, line.t, via === "" ? "always" : via, reentered);
  }

  snapshot(line: SnapshotLine): void {
    if (line.value !== undefined) this.configure(line.value, line.t, line.eventType, []);
  }

  private configure(value: unknown, t: number, via: string, reentered: string[]): void {
    const next = activeStateIds(this.chart.root, value);
    const entered = next.filter((id) => !this.active.has(id) || reentered.some((target) => this.within(id, target)));
    this.enter(entered, t, via);
    this.active = new Set(next);
  }
}

/** Pairs start and end telemetry into timeline entries. */
class TimelineBuilder {
  readonly entries: TimelineEntry[] = [];
  readonly markers: TimelineMarker[] = [];
  private readonly open = new Map<string, TimelineEntry>();
  private openModel: TimelineEntry | undefined;
  private round = 0;
  private models = 0;
  readonly iterationStarts = new Map<number, number>();
  readonly summary = { agent: "", runId: undefined as string | undefined, status: undefined as string | undefined, reason: undefined as string | undefined, rounds: 0, usage: undefined as RunSummary["usage"] | undefined };
  readonly counts: Record<string, number> = {};
  /** Nested agents by their path's JSON. */
  readonly nested = new Map<string, NestedAgentSummary>();
  /** The top agent's iteration, which nested calls are drawn in. */
  private iteration = 0;

  /** A nested agent's event: counted for it, and its calls drawn in the top agent's current iteration. */
  private nestedScope(e: Record<string, unknown>): { key: string; label: string; summary: NestedAgentSummary } | undefined {
    const raw = e["agentPath"];
    if (!Array.isArray(raw) || raw.length === 0) return undefined;
    const path = raw.filter(isPlainObject).map((p) => ({ agent: String(p["agent"] ?? "?"), callId: String(p["callId"] ?? "?") }));
    const key = JSON.stringify(path);
    let summary = this.nested.get(key);
    if (!summary) {
      const label = path.map((p) => `${p.agent} (call ${p.callId})`).join(" › ");
      summary = { path, label, status: "unfinished", modelCalls: 0, toolCalls: 0 };
      this.nested.set(key, summary);
    }
    return { key, label: summary.label, summary };
  }

  add(line: EmitLine): void {
    const e = line.event as Record<string, unknown>;
    const type = line.event.type;
    this.counts[type] = (this.counts[type] ?? 0) + 1;
    const scope = this.nestedScope(e);
    if (scope) return this.addNested(line, scope);
    const iteration = num(e["iteration"]);
    this.iteration = iteration;
    if (!this.iterationStarts.has(iteration)) this.iterationStarts.set(iteration, line.t);
    if (typeof e["agent"] === "string") this.summary.agent = e["agent"];
    if (typeof e["runId"] === "string") this.summary.runId = e["runId"];
    this.addCalls(line, iteration, "");
  }

  /** Nested calls join the timeline under their agent's label; keys carry the path (call ids repeat across agents). */
  private addNested(line: EmitLine, scope: { key: string; label: string; summary: NestedAgentSummary }): void {
    const e = line.event as Record<string, unknown>;
    const before = this.entries.length;
    switch (line.event.type) {
      case "model.call.started":
        scope.summary.modelCalls += 1;
        break;
      case "tool.call.started":
        scope.summary.toolCalls += 1;
        break;
      case "loop.terminated":
        scope.summary.status = str(e["status"]) ?? "unfinished";
        if (str(e["reason"]) !== undefined) scope.summary.reason = str(e["reason"])!;
        if (usageOf(e["usage"])) scope.summary.usage = usageOf(e["usage"])!;
        return;
      case "reply.started":
        // The nested agent's rounds are its own: the top agent's round numbers stay.
        return;
    }
    this.addCalls(line, this.iteration, `${scope.key}:`);
    for (const entry of this.entries.slice(before)) entry.agent = scope.label;
  }

  private addCalls(line: EmitLine, iteration: number, prefix: string): void {
    const e = line.event as Record<string, unknown>;
    const type = line.event.type;
    const t = line.t;
    switch (type) {
      case "reply.started":
        this.round = num(e["round"], this.round + 1);
        break;
      case "model.call.started": {
        this.models += 1;
        const entry: TimelineEntry = {
          kind: "model",
          id: `model-${this.models}`,
          name: str(e["model"]) ?? "model",
          start: t,
          end: t,
          durationMs: 0,
          status: "unfinished",
          iteration,
          round: this.round,
          attempt: num(e["attempt"], 1),
        };
        this.entries.push(entry);
        this.openModel = entry;
        break;
      }
      case "reasoning.delta": {
        const delta = str(e["delta"]);
        if (this.openModel && delta !== undefined) this.openModel.reasoning = (this.openModel.reasoning ?? "") + delta;
        break;
      }
      case "model.call.completed":
      case "model.call.failed": {
        const entry = this.openModel ?? this.syntheticModel(t, num(e["durationMs"]), iteration, str(e["model"]));
        this.openModel = undefined;
        entry.end = t;
        entry.durationMs = Math.max(0, t - entry.start);
        entry.name = str(e["model"]) ?? entry.name;
        if (type === "model.call.completed") {
          entry.status = "ok";
          const usage = usageOf(e["usage"]);
          if (usage) entry.tokens = usage;
          const finish = str(e["finishReason"]);
          if (finish) entry.detail = `finish: ${finish}`;
        } else {
          entry.status = e["willRetry"] === true ? "retried" : "failed";
          entry.detail = str(e["message"]) ?? "failed";
        }
        break;
      }
      case "tool.call.started": {
        const callId = str(e["callId"]) ?? `tool-${this.entries.length}`;
        const entry: TimelineEntry = { kind: "tool", id: callId, name: str(e["name"]) ?? "tool", start: t, end: t, durationMs: 0, status: "unfinished", iteration, round: this.round };
        const args = str(e["arguments"]);
        if (args !== undefined) entry.detail = `args: ${args}`;
        this.entries.push(entry);
        this.open.set(`${prefix}tool:${callId}`, entry);
        break;
      }
      case "tool.call.retrying": {
        // The call goes on: its bar stays open, and its detail says which attempt failed and why.
        const entry = this.open.get(`${prefix}tool:${str(e["callId"]) ?? ""}`);
        if (!entry) break;
        const line = `attempt ${String(e["attempt"])} of ${String(e["attempts"])} failed: ${str(e["error"]) ?? "(no message)"}; again in ${String(e["delayMs"])} ms`;
        entry.detail = entry.detail ? `${entry.detail}\n${line}` : line;
        break;
      }
      case "tool.call.completed":
      case "tool.call.failed": {
        const callId = str(e["callId"]) ?? "";
        const entry = this.open.get(`${prefix}tool:${callId}`);
        if (!entry) break;
        this.open.delete(`${prefix}tool:${callId}`);
        entry.end = t;
        entry.durationMs = Math.max(0, t - entry.start);
        entry.status = type === "tool.call.completed" ? "ok" : "failed";
        const result = type === "tool.call.completed" ? str(e["output"]) : str(e["error"]);
        if (result !== undefined) entry.detail = `${entry.detail ? `${entry.detail}\n` : ""}${type === "tool.call.completed" ? "output" : "error"}: ${result}`;
        break;
      }
      case "guard.approval.requested": {
        const callId = str(e["callId"]) ?? `approval-${this.entries.length}`;
        const entry: TimelineEntry = { kind: "approval", id: callId, name: str(e["name"]) ?? "call", start: t, end: t, durationMs: 0, status: "unfinished", iteration, round: this.round };
        const reason = str(e["reason"]);
        if (reason !== undefined) entry.detail = reason;
        this.entries.push(entry);
        this.open.set(`${prefix}approval:${callId}`, entry);
        break;
      }
      case "guard.approval.decided": {
        const callId = str(e["callId"]) ?? "";
        const entry = this.open.get(`${prefix}approval:${callId}`);
        if (!entry) break;
        this.open.delete(`${prefix}approval:${callId}`);
        entry.end = t;
        entry.durationMs = Math.max(0, t - entry.start);
        entry.status = e["decision"] === "approved" ? "approved" : "rejected";
        const how = e["edited"] === true ? "approved with edited arguments" : String(e["decision"] ?? "decided");
        const reason = str(e["reason"]);
        entry.detail = [entry.detail, reason ? `${how}: ${reason}` : how].filter(Boolean).join(" — ");
        break;
      }
      case "tool.call.denied":
        if (e["decision"] === "denied") this.markers.push({ kind: "denied", t, name: str(e["name"]) ?? "call", detail: str(e["reason"]) ?? "denied" });
        break;
      case "guard.approval.refused":
        this.markers.push({ kind: "refused", t, name: str(e["callId"]) ?? "approval", detail: str(e["reason"]) ?? "refused" });
        break;
      case "guardrail.tripped":
      case "guardrail.retried": {
        const why = str(e["reason"]) ?? str(e["feedback"]) ?? "";
        const what = e["type"] === "guardrail.tripped" ? "tripped" : "sent feedback";
        this.markers.push({ kind: "guardrail", t, name: str(e["guardrail"]) ?? "guardrail", detail: `${str(e["stage"]) ?? "?"} guardrail ${what}: ${why}` });
        break;
      }
      case "agent.handoff":
        this.markers.push({ kind: "handoff", t, name: str(e["to"]) ?? "agent", detail: `${str(e["from"]) ?? "agent"} handed the conversation to ${str(e["to"]) ?? "another agent"} (call ${str(e["callId"]) ?? "?"})` });
        break;
      case "loop.terminated":
        this.summary.status = str(e["status"]);
        this.summary.reason = str(e["reason"]);
        this.summary.rounds = num(e["rounds"]);
        this.summary.usage = usageOf(e["usage"]);
        break;
      default:
        break;
    }
  }

  private syntheticModel(t: number, durationMs: number, iteration: number, model: string | undefined): TimelineEntry {
    this.models += 1;
    const entry: TimelineEntry = { kind: "model", id: `model-${this.models}`, name: model ?? "model", start: t - durationMs, end: t, durationMs, status: "unfinished", iteration, round: this.round };
    this.entries.push(entry);
    return entry;
  }

  finish(end: number): void {
    for (const entry of [...this.open.values(), ...(this.openModel ? [this.openModel] : [])]) {
      entry.end = end;
      entry.durationMs = Math.max(0, end - entry.start);
    }
  }
}

/** Read a recording and compute what the viewer shows. Streams the file; holds one root context. */
export async function analyzeRecording(file: string): Promise<RunAnalysis> {
  const parents = await parentsOf(file);
  const { header, lines } = await readRecording(file);
  const counter = new VisitCounter(header.chart);
  const timeline = new TimelineBuilder();
  let root: string | undefined;
  let context: Plain | undefined;
  let lastT = 0;
  let actorStatus: string | undefined;
  let rootOutput: unknown;
  const actorIds = new Map<string, string>();
  const nestedActors: NestedActor[] = [];

  for await (const line of lines) {
    lastT = Math.max(lastT, line.t);
    switch (line.k) {
      case "actor":
        if (root === undefined && line.machine && !parents.has(line.actor)) root = line.actor;
        actorIds.set(line.actor, line.id);
        if (line.machine && line.src?.startsWith("agent.") && parents.has(line.actor)) nestedActors.push({ id: line.id, src: line.src, parent: parents.get(line.actor)! });
        break;
      case "event":
        if (line.actor === root) counter.macro += 1;
        break;
      case "microstep":
        if (line.actor === root) counter.microstep(line);
        break;
      case "snapshot":
        if (line.actor !== root) break;
        counter.snapshot(line);
        if (line.context) context = applyDiff(context, line.context);
        actorStatus = line.status;
        if (line.output !== undefined) rootOutput = line.output;
        break;
      case "emit":
        timeline.add(line);
        break;
      default:
        break;
    }
  }
  timeline.finish(lastT);

  const starts = [...timeline.iterationStarts.entries()].sort((a, b) => a[0] - b[0]);
  const iterations = starts.map(([iteration, start], i) => ({ iteration, start, end: starts[i + 1]?.[1] ?? lastT }));
  const entries = timeline.entries;
  const modelEntries = entries.filter((e) => e.kind === "model");
  const summed = modelEntries.reduce(
    (acc, e) => ({
      promptTokens: acc.promptTokens + (e.tokens?.promptTokens ?? 0),
      completionTokens: acc.completionTokens + (e.tokens?.completionTokens ?? 0),
      totalTokens: acc.totalTokens + (e.tokens?.totalTokens ?? 0),
    }),
    { promptTokens: 0, completionTokens: 0, totalTokens: 0 },
  );
  const output = isPlainObject(rootOutput as Plain) ? (rootOutput as Record<string, unknown>) : undefined;
  const finalAnswer = str(output?.["finalAnswer"]);
  const messages = findMessages(context).map(toMessage);
  const telemetry = Object.keys(timeline.counts).length > 0;
  const summary: RunSummary = {
    agent: timeline.summary.agent || header.machineId,
    status: timeline.summary.status ?? actorStatus ?? "unfinished",
    rounds: timeline.summary.rounds || new Set(modelEntries.map((e) => e.round)).size,
    // Iterations the run worked in (the last one included), from the telemetry's iteration numbers.
    iterations: starts.length,
    usage: timeline.summary.usage ?? summed,
    durationMs: lastT,
    modelCalls: modelEntries.length,
    toolCalls: entries.filter((e) => e.kind === "tool").length,
    approvals: entries.filter((e) => e.kind === "approval").length,
    events: timeline.counts,
    telemetry,
  };
  if (timeline.summary.runId !== undefined) summary.runId = timeline.summary.runId;
  if (timeline.summary.reason !== undefined) summary.reason = timeline.summary.reason;
  if (finalAnswer !== undefined) summary.finalAnswer = finalAnswer;
  if (!telemetry) Object.assign(summary, figuresWithoutTelemetry(output, context, messages));

  return {
    header,
    chart: header.chart,
    visits: counter.visits,
    transitions: counter.transitions,
    steps: counter.steps,
    timeline: entries,
    markers: timeline.markers,
    iterations,
    messages,
    summary,
    nestedAgents: [...timeline.nested.values()],
    nestedActors: nestedActors.map((a) => ({ ...a, parent: actorIds.get(a.parent) ?? a.parent })),
  };
}
