/**
 * jianmu/otel: OpenTelemetry traces of agent runs, following the GenAI semantic conventions.
 * Needs the optional peer `@opentelemetry/api` (`npm install @opentelemetry/api`); `import "jianmu"`
 * never loads this file.
 *
 *   runAgent(machine, input, { tracer })          // from "jianmu": loads the tracer on demand
 *   traceAgent(createActor(machine, ...), { tracer })   // for your own actor, before actor.start()
 *
 * What imports @opentelemetry/api is loaded through `loadOptionalPeer`, so a missing package is one
 * clear error naming the install command.
 */
import { loadOptionalPeer } from "./tools/optional-peer.js";
import type * as Tracing from "./otel/trace-agent.js";

const tracing: typeof Tracing = await loadOptionalPeer({ entry: "jianmu/otel", packages: ["@opentelemetry/api"] }, () => import("./otel/trace-agent.js"));

export const { traceAgent, TraceOptionsError } = tracing;
export type TraceOptionsError = Tracing.TraceOptionsError;
export type { AgentTrace, TraceAgentOptions } from "./otel/trace-agent.js";
export type { AgentPathEntry, TracedEvent } from "./otel/run-tracer.js";
export { ATTR as TRACE_ATTRIBUTES, AWAITING_APPROVAL, OPERATION } from "./otel/semconv.js";
export type { ApprovalSpanDecision, ToolSpanStatus } from "./otel/semconv.js";
export { TraceLinkSchema } from "./machines/persistence/trace-link.js";
export type { TraceLink } from "./machines/persistence/trace-link.js";
export { OptionalPeerMissingError } from "./tools/optional-peer.js";
