/**
 * jianmu/client: a page or a script following runs served by `agentHandler` (jianmu/http), without
 * React. The client statechart (`createActor(agentClientMachine, { input: { url, agent } })`), the
 * pure `applyRunEvent` it folds server-sent events with, and its SSE reader. Needs only xstate and
 * zod, the peers every app has; jianmu/react builds `useAgent` on the same statechart.
 */
export { agentClientMachine, clientStatusOf, reconnectDelay } from "./web/client/agent-client-machine.js";
export type { AgentClientContext, AgentClientEvent, AgentClientInput, AgentClientStatus } from "./web/client/agent-client-machine.js";
export { applyRunEvent, EMPTY_RUN } from "./web/client/run-state.js";
export type { RunState, ToolCallView } from "./web/client/run-state.js";
export { readSse } from "./web/client/sse-reader.js";
export type { SseMessage } from "./web/client/sse-reader.js";
export { readThread } from "./web/client/transport.js";
export type { FetchLike } from "./web/client/transport.js";
export type { ThreadView, ThreadRunView } from "./web/protocol.js";
