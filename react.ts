/**
 * jianmu/react: `useAgent({ url, agent })` runs an agent served by `agentHandler` (jianmu/http)
 * from a React component. Needs the optional peers react and @xstate/react. The client statechart
 * and its SSE transport are exported too, for pages without React (`createActor(agentClientMachine, ...)`).
 */
import { loadOptionalPeer } from "./tools/optional-peer.js";
import type * as Hook from "./web/client/use-agent.js";

// Only the hook imports react and @xstate/react: loaded so that a missing one is one clear error.
const hook: typeof Hook = await loadOptionalPeer({ entry: "jianmu/react", packages: ["react", "@xstate/react"] }, () => import("./web/client/use-agent.js"));

export const { useAgent } = hook;
export type { UseAgentOptions, UseAgentResult } from "./web/client/use-agent.js";
export { agentClientMachine, clientStatusOf, reconnectDelay } from "./web/client/agent-client-machine.js";
export type { AgentClientContext, AgentClientEvent, AgentClientInput, AgentClientStatus } from "./web/client/agent-client-machine.js";
export { applyRunEvent, EMPTY_RUN } from "./web/client/run-state.js";
export type { RunState, ToolCallView } from "./web/client/run-state.js";
export { readSse } from "./web/client/sse-reader.js";
export type { SseMessage } from "./web/client/sse-reader.js";
export { readThread } from "./web/client/transport.js";
export type { FetchLike } from "./web/client/transport.js";
export type { ThreadView, ThreadRunView } from "./web/protocol.js";
export { OptionalPeerMissingError } from "./tools/optional-peer.js";
// A message's content may be parts (text, images, files): its text, or the text with each image or file named.
export { describeContent, textOf } from "./actors/content-parts.js";
export type { ContentPart, ImagePart, FilePart, PartsContent } from "./actors/messages.js";
