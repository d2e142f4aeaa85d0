/**
 * `jianmu/ai-sdk`: any AI SDK language model (Claude, Gemini, Bedrock, Mistral, local models, ...)
 * as a jianmu model client (`fromAiSdk`). Needs the optional package `ai` and the provider package
 * of your choice (`npm install ai @ai-sdk/anthropic`); `jianmu` itself never loads either.
 */
import { loadOptionalPeer } from "./tools/optional-peer.js";
import type * as AiSdk from "./actors/ai-sdk/index.js";

const aiSdk: typeof AiSdk = await loadOptionalPeer({ entry: "jianmu/ai-sdk", packages: ["ai"] }, () => import("./actors/ai-sdk/index.js"));

export const { fromAiSdk, FromAiSdkOptionsSchema } = aiSdk;
export type { FromAiSdkOptions, AiSdkLanguageModel } from "./actors/ai-sdk/index.js";
export { OptionalPeerMissingError } from "./tools/optional-peer.js";
