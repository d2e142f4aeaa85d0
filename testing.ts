/** Test doubles and helpers for your own tests of jianmu agents. */
export { scriptedModel } from "./testing/scripted-model.js";
export type { ScriptedModel, ScriptedResponse } from "./testing/scripted-model.js";
export { agentEmittedSchema } from "./machines/contract/emitted.js";
export { startOpenAIServer, replies, toSse, splitEvents } from "./testing/openai-server.js";
export type { OpenAIServer, OpenAIServerOptions, Reply, Respond, ReceivedRequest, RequestOutcome } from "./testing/openai-server.js";
export { textTurn, toolCallTurn, scriptedTurns, recordedTurns } from "./testing/turns.js";
export { responsesTextTurn, responsesToolCallTurn } from "./testing/responses-turns.js";
export type { ResponsesTurnOptions, ScriptedReasoning } from "./testing/responses-turns.js";
export type { TurnPacing, TurnReplay, TurnUsage, ScriptedCall } from "./testing/turns.js";
export { loadRecording, replayInteractions, replayRecording, formatOf, wireMediaOf } from "./testing/recordings.js";
export type { Recording, RecordedInteraction, RecordingFormat, RecordedApi } from "./testing/recordings.js";
export { generateAgentPaths, InvariantViolation, ReplayDivergence, ModelTooLargeError, ModelInconsistencyError } from "./testing/model-based.js";
export type {
  AgentPaths,
  AgentPath,
  AgentPathsOptions,
  PathStepInfo,
  FinalState,
  CoverageSummary,
  ModelTurnScript,
  Policy,
  PolicyCall,
  PolicyDecision,
  EventKind,
  InvariantName,
  Violation,
  ReplayOptions,
  ReplayResult,
} from "./testing/model-based.js";
export { runEvals, evalFailures, formatEvalReport, formatEvalResult, EvalDefinitionError, EvalExpectationSchema } from "./testing/evals.js";
export type { EvalCase, EvalExpectation, EvalResult, EvalReport, EvalOptions } from "./testing/evals.js";
export { TrajectoryRecorder } from "./testing/trajectory.js";
export type { Trajectory, ToolCallRecord } from "./testing/trajectory.js";
export { asRequested, wholeCompletion } from "./testing/whole-completion.js";
