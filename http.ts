/**
 * jianmu/http: serve agents to web pages. `agentHandler({ agents })` is a fetch-style handler
 * (`(Request) => Promise<Response>`) for Node (through `toNodeListener`), Hono, Next.js route
 * handlers and other fetch runtimes. The protocol's schemas and types are exported for clients.
 */
export { agentHandler } from "./web/server/handler.js";
export type { AgentHandler, AgentHandlerOptions } from "./web/server/handler.js";
export { toNodeListener, remoteAddressOf } from "./web/server/node-adapter.js";
export type { RateLimitOptions } from "./web/server/rate-limit.js";
export { storeRunEvents } from "./web/server/store-events.js";
export type { Authorize, AuthorizeAction, AuthorizeContext, ClientInputPolicy } from "./web/server/access.js";
export {
  StartRunSchema,
  RunCommandSchema,
  RunSnapshotSchema,
  RunOutputSchema,
  RUN_EVENT_SCHEMAS,
  RUN_EVENT_TYPES,
  ErrorBodySchema,
  CommandAcceptedSchema,
  ThreadViewSchema,
  ThreadRunViewSchema,
  parseRunEvent,
} from "./web/protocol.js";
export type {
  StartRun,
  RunCommand,
  RunSnapshot,
  RunOutputView,
  RunEvent,
  RunEventType,
  RunEventData,
  IdentifiedRunEvent,
  ErrorBody,
  ErrorCode,
  CommandAccepted,
  ThreadView,
  ThreadRunView,
  ChartPosition,
  PendingApprovalView,
  RunStatus,
} from "./web/protocol.js";
