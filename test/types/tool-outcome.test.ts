import { describe, expectTypeOf, it } from "vitest";
import type { z } from "zod";
import type { CallPlan, PlannedTool, UnjournaledPlan } from "../../actors/call-plan.js";
import type { ToolErrorKind as ExecutorErrorKind, ToolOutcome as ExecutorOutcome } from "../../actors/tool-executor.js";
import type { ToolErrorKindSchema, ToolOutcome } from "../../actors/tool-outcome.js";
import type { ToolErrorKind as PublicErrorKind, ToolOutcome as PublicOutcome, ToolOutcomeSchema } from "../../index.js";

/** The tool outcome is written once, as a schema: every name it is known by is that schema's type. */
describe("tool outcome types", () => {
  it("ToolOutcome is the inferred type of ToolOutcomeSchema, under every name it is exported by", () => {
    expectTypeOf<ToolOutcome>().toEqualTypeOf<z.infer<typeof ToolOutcomeSchema>>();
    expectTypeOf<PublicOutcome>().toEqualTypeOf<ToolOutcome>();
    expectTypeOf<ExecutorOutcome>().toEqualTypeOf<ToolOutcome>();
    expectTypeOf<PublicErrorKind>().toEqualTypeOf<z.infer<typeof ToolErrorKindSchema>>();
    expectTypeOf<ExecutorErrorKind>().toEqualTypeOf<PublicErrorKind>();
  });

  it("a failure's message is a typed field next to its kind", () => {
    expectTypeOf<ToolOutcome["error"]>().toEqualTypeOf<string | undefined>();
    expectTypeOf<ToolOutcome["errorKind"]>().toEqualTypeOf<PublicErrorKind | undefined>();
  });

  it("without a journal a plan can only answer, refuse or run", () => {
    expectTypeOf<UnjournaledPlan<PlannedTool>["kind"]>().toEqualTypeOf<"answer" | "refuse" | "run">();
    expectTypeOf<CallPlan<PlannedTool>["kind"]>().toEqualTypeOf<"answer" | "readJournal" | "replay" | "refuse" | "interrupted" | "run">();
  });
});
