import type { ToolInfo } from "../tools/tool.js";
import { functionSchemas, perToolList } from "../tools/toolset.js";
import type { Resilience } from "./resilience-config.js";
import { defaultContextBuilder, type ContextBuilder, type ContextInput } from "./context-builder.js";
import { cancellationOf } from "./cancellation.js";
import { answerDanglingCalls, type Message } from "./messages.js";
import { isSaneUsage, saneUsage, type ModelCallEvent, type ModelClient, type ModelRequest, type ModelTurn, type ToolChoice } from "./model-client.js";
import { ModelRouteSchema, type ModelRoute } from "./model-route.js";
import { ProgressBatcher, type Progress } from "./progress.js";
import { ReasoningItemsSchema } from "./reasoning-items.js";
import { fromReportingPromise } from "./reporting-promise.js";
import { asSpendError, plusUnreported, withLost, type SpendInput } from "./spend.js";
import { beginBudgetedCall, type BudgetedCall, type CallMeter } from "./call-meter.js";

/** What the machine hands the LLM actor for one reply. JSON-safe (it is part of persisted snapshots). */
export interface LLMInput {
  agent: string;
  runId: string;
  iteration: number;
  /** Model replies so far in this run; 0 means this is the first round. */
  rounds: number;
  messages: Message[];
  state: Record<string, unknown>;
  tools: ToolInfo[];
  systemPrompt?: string;
  sampling: {
    model?: string;
    temperature?: number;
    maxTokens?: number;
    topP?: number;
    topK?: number;
    timeoutMs?: number;
  };
  /** Already filtered by the first-round rule: present only when `rounds === 0`. */
  toolChoice?: ToolChoice;
  extraParams: Record<string, unknown>;
  resilience?: Resilience;
  /** Report this tool's arguments as they stream (a structured output's final-result tool). */
  streamArguments?: string;
  /** With a budget: what the call may still spend (actors/spend.ts); its maxTokens is capped to it. */
  spend?: SpendInput;
  /** Where the run's last call was answered (`loop.modelRoute`), for sticky fallbacks. */
  route?: ModelRoute;
  /** A fork waiting on the call it was forked at (`SpendState.forkPoint`): made again, it was never this run's to count. */
  forkPoint?: true;
}

function withoutField(turn: ModelTurn, field: "reasoningItems" | "route"): ModelTurn {
  const copy = { ...turn };
  delete copy[field];
  return copy;
}

/** A streamed call's arguments so far, for the tool named by `LLMInput.streamArguments`. */
export interface ToolArgumentsProgress {
  type: "tool.arguments";
  name: string;
  arguments: string;
}

/** What the LLM step reports while it runs. */
export type LLMProgress = ModelCallEvent | ToolArgumentsProgress;

/**
 * The model's turn, plus the call's progress not yet sent to the agent (see `ProgressBatcher`) and,
 * with a budget, the prompt's estimated size (the machine compares it with what the server counted).
 */
export type LLMOutput = ModelTurn & { progress?: Progress<LLMProgress>[]; promptEstimate?: number };

/** Sent to the parent while the call runs: attempts, retries and streamed text, in batches. */
export interface LLMProgressEvent {
  type: "llm.progress";
  progress: Progress<LLMProgress>[];
}

export interface LLMActorDeps {
  modelClient: ModelClient;
  contextBuilder?: ContextBuilder;
  /** The agent's clock, for when each progress event happened. */
  now?: () => number;
  /**
   * The call's resilience policy with its fallbacks' keys. Kept here, outside the machine: the
   * input (persisted in every snapshot) only carries it without keys. Wins over `input.resilience`.
   */
  resilience?: Resilience;
}

/**
 * A call's start, end or failed attempt may wait for the next burst (the first streamed text, the
 * window's tick or the result): the start is always followed by a network round trip, and sent
 * alone it would cost the agent a macrostep per call that nobody waits for. Text and streamed
 * arguments are what a reader waits for: the first of a burst goes at once (see ProgressBatcher).
 */
const isCallLifecycle = (event: LLMProgress): boolean => event.type !== "text.delta" && event.type !== "tool.arguments";

/** The agent's tool list is one unchanging array per run (it lives in context): its schemas are built once. */
const schemasOf = perToolList(functionSchemas);

/** Assemble the request the model client receives. Exported so custom LLM actors can reuse it. */
export async function buildModelRequest(input: LLMInput, contextBuilder: ContextBuilder = defaultContextBuilder): Promise<ModelRequest> {
  return requestFor(input, await contextBuilder(contextInputOf(input)));
}

function contextInputOf(input: LLMInput): ContextInput {
  return {
    agent: input.agent,
    iteration: input.iteration,
    messages: input.messages,
    state: input.state,
    tools: input.tools,
    ...(input.systemPrompt !== undefined ? { systemPrompt: input.systemPrompt } : {}),
  };
}

/**
 * The request for the prompt a context builder made. Apart from `buildModelRequest` so the LLM step
 * can skip the await (a promise and a microtask hop per round) when the builder answers at once,
 * as the default one does.
 */
function requestFor(input: LLMInput, messages: Message[]): ModelRequest {
  const request: ModelRequest = { messages: answerDanglingCalls(messages), tools: schemasOf(input.tools), extraParams: input.extraParams };
  const { model, temperature, maxTokens, topP, topK, timeoutMs } = input.sampling;
  if (model !== undefined) request.model = model;
  if (temperature !== undefined) request.temperature = temperature;
  if (maxTokens !== undefined) request.maxTokens = maxTokens;
  if (topP !== undefined) request.topP = topP;
  if (topK !== undefined) request.topK = topK;
  if (timeoutMs !== undefined) request.timeoutMs = timeoutMs;
  if (input.toolChoice !== undefined) request.toolChoice = input.toolChoice;
  if (input.resilience !== undefined) request.resilience = input.resilience;
  if (input.route !== undefined) request.route = input.route;
  return request;
}

/** A budgeted call's events: its meter hears each attempt, then they go to the agent as for any call. */
function meteredEvents(meter: CallMeter, progress: ProgressBatcher<LLMProgress>): (event: ModelCallEvent) => void {
  return (event) => {
    meter.heard(event);
    progress.push(event);
  };
}

/**
 * The default LLM actor: build the prompt, call the model with the tool schemas, stream
 * progress to the agent. It rejects with the model client's error when the call fails for good.
 */
export function createLLMActor(deps: LLMActorDeps) {
  const now = deps.now ?? Date.now;
  return fromReportingPromise<LLMOutput, LLMInput, LLMProgressEvent>(async (args) => {
    const { input, report } = args;
    // The step's signal is not read unless a model client asks for it: building one costs more
    // than the rest of the call's overhead (see `Cancellation`). Under plain fromPromise there is
    // only the signal.
    const cancellation = args.cancellation ?? cancellationOf(args.signal);
    // Once stopped (cancel, actor.stop) the parent is gone: late attempt events report to no one.
    const progress = new ProgressBatcher<LLMProgress>(
      (batch) => {
        if (!cancellation.aborted) report?.({ type: "llm.progress", progress: batch });
      },
      now,
      { canWait: isCallLifecycle },
    );
    let spent: BudgetedCall | undefined;
    try {
      const built = (deps.contextBuilder ?? defaultContextBuilder)(contextInputOf(input));
      let request = requestFor(input, Array.isArray(built) ? built : await built);
      if (deps.resilience !== undefined) request.resilience = deps.resilience;
      // With a budget: a lost call made again counts first, the call is capped by what is left (over
      // budget it is not made: a SpendLimitError), and metered in case the run ends mid-call.
      if (input.spend) {
        spent = beginBudgetedCall(args.self, "llm", request, input.spend, deps.modelClient.model, { again: args.again, forkPoint: input.forkPoint });
        request = spent.request;
      }
      const wanted = input.streamArguments;
      let turn = await deps.modelClient.complete(request, {
        // A getter: only a client that does not know `cancellation` builds the signal.
        get signal() {
          return cancellation.signal;
        },
        cancellation,
        onEvent: spent ? meteredEvents(spent.meter, progress) : (event) => progress.push(event),
        ...(wanted !== undefined
          ? { onToolArguments: (call: { name: string; arguments: string }) => call.name === wanted && progress.push({ type: "tool.arguments", name: call.name, arguments: call.arguments }) }
          : {}),
      });
      // Any client's counts (a custom one's too) must not corrupt the run's usage or its budget.
      if (!isSaneUsage(turn.usage)) turn = { ...turn, usage: saneUsage(turn.usage), usageMissing: true };
      // What goes into context is checkpointed and checked on restore: a custom client's malformed
      // reasoning items or route are left out rather than saved into a snapshot that would not restore.
      if (turn.reasoningItems !== undefined && !ReasoningItemsSchema.safeParse(turn.reasoningItems).success) turn = withoutField(turn, "reasoningItems");
      if (turn.route !== undefined && !ModelRouteSchema.safeParse(turn.route).success) turn = withoutField(turn, "route");
      const output: LLMOutput = progress.attachTo(turn);
      if (!spent) return output;
      // A copy: the turn is the client's object.
      const counted: LLMOutput = Object.assign({}, output, { promptEstimate: spent.estimate });
      if (spent.lost) counted.unreported = plusUnreported(output.unreported, spent.lost);
      return counted;
    } catch (error) {
      // The failed attempts are worth reporting: send them before the error ends the step.
      progress.flush();
      throw withLost(asSpendError(error), spent?.lost);
    } finally {
      // Its outcome says what it cost from here (or no one hears it any more).
      spent?.release();
    }
  });
}
