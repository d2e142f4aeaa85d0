/**
 * `jianmu/inspect`: the Stately inspector for agents (`inspectAgent`). Needs the optional package
 * @statelyai/inspect (`npm install @statelyai/inspect`); `jianmu` itself never loads it.
 */
import { loadOptionalPeer } from "./tools/optional-peer.js";
import type * as Inspect from "./visualize/inspector.js";

const inspect: typeof Inspect = await loadOptionalPeer({ entry: "jianmu/inspect", packages: ["@statelyai/inspect"] }, () => import("./visualize/inspector.js"));

export const { inspectAgent, inspectionSanitizer, combineInspectors, InspectorAdapterError } = inspect;
export type InspectorAdapterError = Inspect.InspectorAdapterError;
export type { InspectAgentOptions, AgentInspector } from "./visualize/inspector.js";
export { OptionalPeerMissingError } from "./tools/optional-peer.js";
