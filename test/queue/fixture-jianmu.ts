import { requireApproval } from "../../actors/guards/index.js";
import { resolveModelClient } from "../../actors/openai/openai-model-client.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { defineTool } from "../../tools/tool.js";

/** What `makeAgents` (fixture-agents.mjs) takes from jianmu, from the sources: the tests run without a build. */
export const jianmu = { createReactMachine, defineTool, ModelClient: { resolve: resolveModelClient }, requireApproval };
