import { describe, expect, expectTypeOf, it } from "vitest";
import type { z } from "zod";
import type { CompactionSize } from "../../actors/compaction.js";
import type { CallDecision } from "../../actors/guard.js";
import type { ModelCallEvent, ModelErrorKind, Usage } from "../../actors/model-client.js";
import type { ToolErrorKind, ToolProgress } from "../../actors/tool-executor.js";
import type { UsageSchema } from "../../actors/usage.js";
import { EMITTED_EVENTS, EMITTED_TYPES, type AgentEmitted, type AgentEmittedType, type AgentPath, type EmittedBase, type TerminationReason } from "../../machines/contract/events.js";

/*
 * The public types of the telemetry, pinned. They are inferred from the table of schemas in
 * machines/contract/emitted.ts (and the actors' event schemas it builds on): a change to a schema that
 * changes what users get must change this file too. `npm run typecheck` checks the assertions;
 * vitest runs the runtime ones.
 */

type Emitted<T extends AgentEmittedType> = Extract<AgentEmitted, { type: T }>;

/** What every emitted event carries, as users read it. */
interface Base {
  agent: string;
  runId: string;
  iteration: number;
  timestamp: number;
  agentPath?: AgentPath | undefined;
}

/** Every emitted type, once, in the table's order: `satisfies` fails to compile on a missing or an extra name. */
const EVERY_TYPE = {
  "reply.started": true,
  "model.call.started": true,
  "text.delta": true,
  "reasoning.delta": true,
  "model.call.completed": true,
  "model.call.failed": true,
  "reply.completed": true,
  "tool.call.started": true,
  "tool.call.retrying": true,
  "tool.call.completed": true,
  "tool.call.failed": true,
  "tool.call.denied": true,
  "guard.approval.requested": true,
  "guard.approval.decided": true,
  "guard.approval.refused": true,
  "agent.command.refused": true,
  "output.partial": true,
  "output.invalid": true,
  "context.compacted": true,
  "loop.terminated": true,
  "agent.handoff": true,
  "guardrail.tripped": true,
  "guardrail.retried": true,
} as const satisfies Record<AgentEmittedType, true>;

describe("the emitted events' public types", () => {
  it("EMITTED_TYPES is exactly the union's types, each once", () => {
    expectTypeOf<(typeof EMITTED_TYPES)[number]>().toEqualTypeOf<AgentEmittedType>();
    expectTypeOf<AgentEmittedType>().toEqualTypeOf<keyof typeof EVERY_TYPE>();
    // The same names in the same order as always (telemetry consumers may list them in this order;
    // a new event joins beside its kin, as reasoning.delta after text.delta).
    expect([...EMITTED_TYPES]).toEqual(Object.keys(EVERY_TYPE));
    expect(new Set(EMITTED_TYPES).size).toBe(EMITTED_TYPES.length);
    // The list is the table's keys, in its order, and each names a schema.
    expect(Object.keys(EMITTED_EVENTS)).toEqual([...EMITTED_TYPES]);
    for (const type of EMITTED_TYPES) expect(EMITTED_EVENTS[type]().shape).toBeTypeOf("object");
    expect(Object.isFrozen(EMITTED_TYPES)).toBe(true);
  });

  it("every event carries the base", () => {
    expectTypeOf<EmittedBase>().toEqualTypeOf<Base>();
    expectTypeOf<AgentEmitted>().toExtend<EmittedBase & { type: AgentEmittedType }>();
  });

  it("model.call.failed declares every field the model client sends (kind, code, next)", () => {
    expectTypeOf<Emitted<"model.call.failed">>().branded.toEqualTypeOf<
      Base & {
        type: "model.call.failed";
        attempt: number;
        model: string;
        endpoint: string;
        status?: number | undefined;
        message: string;
        willRetry: boolean;
        durationMs: number;
        kind?: ModelErrorKind | undefined;
        code?: string | undefined;
        next?: "retry" | "fallback" | "none" | undefined;
      }
    >();
  });

  it("model and tool events are what the actors report plus the base: one shape, no cast between copies", () => {
    expectTypeOf<Emitted<"model.call.started">>().branded.toEqualTypeOf<Extract<ModelCallEvent, { type: "model.call.started" }> & EmittedBase>();
    expectTypeOf<Emitted<"text.delta">>().branded.toEqualTypeOf<Extract<ModelCallEvent, { type: "text.delta" }> & EmittedBase>();
    expectTypeOf<Emitted<"reasoning.delta">>().branded.toEqualTypeOf<Base & { type: "reasoning.delta"; delta: string }>();
    expectTypeOf<Emitted<"model.call.completed">>().branded.toEqualTypeOf<Extract<ModelCallEvent, { type: "model.call.completed" }> & EmittedBase>();
    expectTypeOf<Emitted<"model.call.failed">>().branded.toEqualTypeOf<Extract<ModelCallEvent, { type: "model.call.failed" }> & EmittedBase>();
    expectTypeOf<Emitted<"tool.call.started">>().branded.toEqualTypeOf<Extract<ToolProgress, { type: "tool.call.started" }> & EmittedBase>();
    expectTypeOf<Emitted<"tool.call.completed">>().branded.toEqualTypeOf<Extract<ToolProgress, { type: "tool.call.completed" }> & EmittedBase>();
    expectTypeOf<Emitted<"tool.call.failed">>().branded.toEqualTypeOf<Extract<ToolProgress, { type: "tool.call.failed" }> & EmittedBase>();
    // What the agent adds to an actor's event makes an emitted event (react-machine.ts relies on it).
    expectTypeOf<ModelCallEvent & EmittedBase>().toExtend<AgentEmitted>();
    expectTypeOf<ToolProgress & EmittedBase>().toExtend<AgentEmitted>();
  });

  it("pins a few events users read most", () => {
    expectTypeOf<Emitted<"tool.call.failed">>().branded.toEqualTypeOf<
      Base & { type: "tool.call.failed"; callId: string; name: string; durationMs: number; error: string; errorKind: ToolErrorKind }
    >();
    expectTypeOf<Emitted<"model.call.completed">["usage"]>().toEqualTypeOf<Usage>();
    expectTypeOf<Emitted<"tool.call.denied">["decision"]>().toEqualTypeOf<Extract<CallDecision["status"], "denied" | "rejected">>();
    expectTypeOf<Emitted<"guard.approval.requested">>().branded.toEqualTypeOf<
      Base & { type: "guard.approval.requested"; callId: string; name: string; arguments: string; reason?: string | undefined; deadline?: number | undefined }
    >();
    expectTypeOf<Emitted<"loop.terminated">>().branded.toEqualTypeOf<
      Base & {
        type: "loop.terminated";
        status: "succeeded" | "failed";
        reason?: TerminationReason | undefined;
        rounds: number;
        usage: Usage;
        unreported?: { tokens: number; cost: number } | undefined;
      }
    >();
    expectTypeOf<Emitted<"context.compacted">["before"]>().toEqualTypeOf<CompactionSize>();
    // A partial output is whatever has streamed so far: present, of unknown shape.
    expectTypeOf<Emitted<"output.partial">>().branded.toEqualTypeOf<Base & { type: "output.partial"; partial: unknown }>();
    expectTypeOf<Emitted<"agent.handoff">>().branded.toEqualTypeOf<Base & { type: "agent.handoff"; callId: string; name: string; from: string; to: string; messages: number }>();
  });

  it("Usage is the schema's shape", () => {
    expectTypeOf<Usage>().toEqualTypeOf<z.infer<typeof UsageSchema>>();
    expectTypeOf<Usage>().toEqualTypeOf<{
      promptTokens: number;
      completionTokens: number;
      totalTokens: number;
      reasoningTokens?: number | undefined;
      cachedPromptTokens?: number | undefined;
      cost?: number | null | undefined;
    }>();
  });
});
