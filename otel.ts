/**
 * jianmu/otel: OpenTelemetry traces of agent runs, following the GenAI semantic conventions.
 * Needs the optional peer `@opentelemetry/api`; `import "jianmu"` never loads this file.
 *
 *   runAgent(machine, input, { tracer })          // from "jianmu": loads this entry point on demand
 *   traceAgent(createActor(machine, ...), { tracer })   // for your own actor, before actor.start()
 */
export { traceAgent, TraceOptionsError } from "./otel/trace-agent.js";
export type { AgentTrace, TraceAgentOptions } from "./otel/trace-agent.js";
export type { AgentPathEntry, TracedEvent } from "./otel/run-tracer.js";
export { ATTR as TRACE_ATTRIBUTES, AWAITING_APPROVAL, OPERATION } from "./otel/semconv.js";
export type { ApprovalSpanDecision, ToolSpanStatus } from "./otel/semconv.js";
export { TraceLinkSchema } from "./machines/trace-link.js";
export type { TraceLink } from "./machines/trace-link.js";
