/**
 * jianmu/react: `useAgent({ url, agent })` runs an agent served by `agentHandler` (jianmu/http)
 * from a React component. Needs the optional peers react and @xstate/react. The client statechart
 * and its SSE transport are exported too, for pages without React (`createActor(agentClientMachine, ...)`).
 */
export { useAgent } from "./web/client/use-agent.js";
export type { UseAgentOptions, UseAgentResult } from "./web/client/use-agent.js";
export { agentClientMachine, clientStatusOf, reconnectDelay } from "./web/client/agent-client-machine.js";
export type { AgentClientContext, AgentClientEvent, AgentClientInput, AgentClientStatus } from "./web/client/agent-client-machine.js";
export { applyRunEvent, EMPTY_RUN } from "./web/client/run-state.js";
export type { RunState, ToolCallView } from "./web/client/run-state.js";
export { readSse } from "./web/client/sse-reader.js";
export type { SseMessage } from "./web/client/sse-reader.js";
export type { FetchLike } from "./web/client/transport.js";
