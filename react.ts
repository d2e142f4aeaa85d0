/**
 * jianmu/react: `useAgent({ url, agent })` runs an agent served by `agentHandler` (jianmu/http)
 * from a React component. Needs the optional peers react and @xstate/react. The client statechart
 * and its SSE transport are exported too; a page or script without React imports them from jianmu/client.
 */
import { loadOptionalPeer } from "./tools/optional-peer.js";
import type * as Hook from "./web/client/use-agent.js";

// Only the hook imports react and @xstate/react: loaded so that a missing one is one clear error.
const hook: typeof Hook = await loadOptionalPeer({ entry: "jianmu/react", packages: ["react", "@xstate/react"] }, () => import("./web/client/use-agent.js"));

export const { useAgent } = hook;
export type { UseAgentOptions, UseAgentResult } from "./web/client/use-agent.js";
// The React-free part, also its own entry point (jianmu/client): one statechart, whichever a page imports.
export { agentClientMachine, applyRunEvent, clientStatusOf, EMPTY_RUN, readSse, readThread, reconnectDelay } from "./client.js";
export type { AgentClientContext, AgentClientEvent, AgentClientInput, AgentClientStatus, FetchLike, RunState, SseMessage, ThreadRunView, ThreadView, ToolCallView } from "./client.js";
export { OptionalPeerMissingError } from "./tools/optional-peer.js";
// A message's content may be parts (text, images, files): its text, or the text with each image or file named.
export { describeContent, textOf } from "./actors/content-parts.js";
export type { ContentPart, ImagePart, FilePart, PartsContent } from "./actors/messages.js";
