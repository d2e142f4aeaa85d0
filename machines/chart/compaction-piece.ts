import { enqueueActions } from "xstate";
import { createCompactionActor, needsCompaction, type CompactionInput, type CompactionOutput } from "../../actors/compaction.js";
import type { Message } from "../../actors/messages.js";
import { addUsage, type Usage } from "../../actors/model-client.js";
import { pricedUsage } from "../../actors/pricing.js";
import { loadTokenizer } from "../../actors/token-count.js";
import type { AgentContext } from "../contract/context.js";
import { STATE_TAGS } from "../contract/state-tags.js";
import type { ChartBuild } from "./build.js";
import { budgetRefusals } from "./loop-piece.js";
import { defineActions, defineGuards, stateConfig, when } from "./piece.js";
import { addUnreported, pastForkPoint, spendInput } from "./spend.js";

/**
 * Compaction (`config.context`): `CheckContext` counts the next prompt's tokens and, over the limit,
 * `Compacting` (the invoked `compaction`, actors/compaction.ts) trims or summarizes the middle of the
 * conversation before the model call.
 */

/** Tokens the next request adds besides the messages: the system prompt and the offered tools. */
function promptOverhead(build: ChartBuild, context: AgentContext): number {
  const { round, llm } = build;
  return round.overhead(round.offered(context.loop.tools, context.loop.round), context.loop.round?.systemPrompt ?? llm.systemPrompt);
}

/** The compaction actor's input: the conversation and what the rest of this round's request weighs. */
function compactionInput(build: ChartBuild, context: AgentContext): CompactionInput {
  const limit = build.config.context!;
  const model = context.loop.round?.model ?? build.config.model;
  const spend = spendInput(build.config, context, build.read<Usage>(context, "usage"));
  return {
    strategy: limit.strategy,
    messages: build.read<Message[]>(context, "messages"),
    maxTokens: limit.maxTokens,
    keepLast: limit.keepLast,
    overhead: promptOverhead(build, context),
    ...(model !== undefined ? { model } : {}),
    ...(build.llm.timeoutMs !== undefined ? { timeoutMs: build.llm.timeoutMs } : {}),
    ...(spend ? { spend } : {}),
  };
}

export function compactionImplementation(build: ChartBuild) {
  const { options, config, access, read, base } = build;
  if (config.context) loadTokenizer();
  return {
    actors: { compaction: createCompactionActor({ modelClient: options.modelClient }) },
    actions: defineActions({
      /** Compacting done: the compacted history replaces the old one; summarizing's tokens join the run's usage. */
      applyCompaction: enqueueActions(({ context, event, enqueue }) => {
        const result = (event as { output?: CompactionOutput }).output;
        if (!result) return;
        const usage = pricedUsage(result.usage, result.usage.totalTokens > 0 ? config.pricing : undefined, result.model);
        enqueue.assign({ state: access.write(context.state, { messages: result.messages, usage: addUsage(read<Usage>(context, "usage"), usage) }) });
        const spend = addUnreported(pastForkPoint(context.loop.spend), result.unreported);
        if (spend !== context.loop.spend) enqueue.assign({ loop: { ...context.loop, spend } });
        enqueue.emit({ type: "context.compacted", ...base(context), strategy: config.context!.strategy, before: result.before, after: result.after, usage });
      }),
    }),
    guards: defineGuards({
      contextTooLong: ({ context }) => needsCompaction(read<Message[]>(context, "messages"), config.context!, promptOverhead(build, context)),
    }),
  };
}

/** CheckContext and Compacting, only with `config.context`; `next`: the model call. */
export function compactionStates(build: ChartBuild, { next }: { next: string }) {
  return when(build.features.context, {
    CheckContext: stateConfig({
      description: "Counts the next prompt's tokens; over config.context.maxTokens (with something to compact) it goes to Compacting.",
      tags: ["context"],
      always: [
        { guard: "contextTooLong", target: "Compacting", description: "The prompt is over the limit: compact it first." },
        { target: next, description: "The prompt fits: ask the model." },
      ],
    }),
    Compacting: stateConfig({
      description: "Trims or summarizes the middle of the conversation (never the system prompt, the first user message, the last keepLast messages, or a tool call without its results).",
      // A summary is a model call: a run lost while it waits on one restores here and asks again,
      // counting the one it lost (with a budget). Trimming is instant and pure: not worth a save.
      tags: ["context", "busy", STATE_TAGS.stable, ...(build.config.context?.strategy === "summarize" ? [STATE_TAGS.checkpoint] : [])],
      invoke: {
        id: build.childId("compaction"),
        src: "compaction",
        input: ({ context }) => compactionInput(build, context),
        onDone: { target: next, description: "The shorter conversation replaces the old one.", actions: "applyCompaction" },
        onError: [
          ...budgetRefusals(build, "No summary was asked for"),
          { target: build.target("Failed"), description: "Summarizing failed: the run fails (modelError).", actions: { type: "terminate", params: { reason: "modelError" } } },
        ],
      },
    }),
  });
}
