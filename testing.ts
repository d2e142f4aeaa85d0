/** Test doubles and helpers for your own tests of jianmu agents. */
export { scriptedModel } from "./testing/scripted-model.js";
export type { ScriptedModel, ScriptedResponse } from "./testing/scripted-model.js";
