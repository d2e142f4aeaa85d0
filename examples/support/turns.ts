/**
 * The examples' model turns come from `jianmu/testing` (in your code: `from "jianmu/testing"`).
 */
export { recordedTurns, scriptedTurns, textTurn, toolCallTurn } from "../../testing.js";
export type { ScriptedCall, TurnPacing, TurnReplay, TurnUsage } from "../../testing.js";
