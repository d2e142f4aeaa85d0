import { z } from "zod";
import { ContentPartSchema, type ContentPart, type ToolCall } from "./messages.js";

/**
 * What became of one tool call, as a value: the shape the executor returns, the tool journal
 * stores and a snapshot keeps (inside `loop.delegation`), defined once as a schema. A failure
 * carries its kind and its message as fields; the observation text the model reads is rendered
 * from them here, and nothing reads the text back.
 */

/**
 * Why a call produced an error observation. `outcome_unknown`: it started before a crash and never
 * reported back, so it was not run again (see ToolJournal). `journal_unavailable`: the journal could
 * not be read or written, so the call was not run (at most once comes first). `already_claimed`:
 * another copy of the same run (restored twice, racing) claimed the call in the journal first, so
 * this copy did not run it. `invalid_output`: the tool ran but its result could not be turned into
 * text at all (its own `toJSON` threw).
 */
export const TOOL_ERROR_KINDS = [
  "unknown_tool",
  "invalid_json",
  "invalid_arguments",
  "threw",
  "timeout",
  "aborted",
  "outcome_unknown",
  "journal_unavailable",
  "already_claimed",
  "invalid_output",
] as const;
export const ToolErrorKindSchema = z.enum(TOOL_ERROR_KINDS);
export type ToolErrorKind = z.infer<typeof ToolErrorKindSchema>;

/** What became of one call of the batch. JSON-safe; becomes exactly one tool message. */
export const ToolOutcomeSchema = z.object({
  callId: z.string(),
  name: z.string(),
  status: z.enum(["ok", "error", "denied", "rejected"]),
  /** The observation the model reads (for a result with images or files: its text, each of them named). */
  content: z.string(),
  /** A result with images or files (`toolContent`): the parts the tool message carries instead of `content`. */
  parts: z.array(ContentPartSchema).optional(),
  errorKind: ToolErrorKindSchema.optional(),
  /**
   * A failed call's message (`status: "error"`), without the observation's wording around it: what
   * `tool.call.failed` reports as `error`. Optional because outcomes journaled by builds before it
   * existed lack it (`failureOf` reads those).
   */
  error: z.string().optional(),
  durationMs: z.number().optional(),
  /** Effect tags of a tool that ran. */
  effectTags: z.array(z.string()),
  /** The tool ended the run: `content` is the final answer. */
  returnDirect: z.boolean().optional(),
});
export type ToolOutcome = z.infer<typeof ToolOutcomeSchema>;

/** The observation the model reads for a failed call: the one place its wording is written. */
export function errorObservation(message: string): string {
  return `Error: ${message}`;
}

/** A failed call's outcome: the kind and the message as values, the observation rendered from them. */
export function failedOutcome(call: Pick<ToolCall, "id" | "name">, errorKind: ToolErrorKind, message: string, durationMs?: number): ToolOutcome {
  return {
    callId: call.id,
    name: call.name,
    status: "error",
    content: errorObservation(message),
    errorKind,
    error: message,
    ...(durationMs !== undefined ? { durationMs } : {}),
    effectTags: [],
  };
}

/** A call that ran and returned: its (already cut) output is the observation. */
export function succeededOutcome(
  call: Pick<ToolCall, "id" | "name">,
  tool: { readonly effectTags: readonly string[]; readonly returnDirect?: boolean | undefined },
  content: string,
  durationMs: number,
  parts?: ContentPart[],
): ToolOutcome {
  return {
    callId: call.id,
    name: call.name,
    status: "ok",
    content,
    ...(parts !== undefined ? { parts } : {}),
    durationMs,
    effectTags: [...tool.effectTags],
    ...(tool.returnDirect ? { returnDirect: true } : {}),
  };
}

/** A call that was not run because its guard decision did not allow it (or there was none). */
export function deniedOutcome(call: Pick<ToolCall, "id" | "name">, reason: string): ToolOutcome {
  return { callId: call.id, name: call.name, status: "denied", content: `Call denied: ${reason}`, effectTags: [] };
}

/** A call that was not run because the approver rejected it (or its approval timed out). */
export function rejectedOutcome(call: Pick<ToolCall, "id" | "name">, reason: string): ToolOutcome {
  return { callId: call.id, name: call.name, status: "rejected", content: `Call rejected: ${reason}`, effectTags: [] };
}

const LEGACY_ERROR_PREFIX = errorObservation("");

/**
 * What `tool.call.failed` reports for an outcome that is not `ok`. The message is the outcome's
 * `error`; an outcome journaled by an earlier build has none, and its observation was always
 * `errorObservation(message)`, so for those alone the message is what follows that prefix.
 */
export function failureOf(outcome: ToolOutcome): { error: string; errorKind: ToolErrorKind } {
  const legacy = () => (outcome.content.startsWith(LEGACY_ERROR_PREFIX) ? outcome.content.slice(LEGACY_ERROR_PREFIX.length) : outcome.content);
  return { error: outcome.error ?? legacy(), errorKind: outcome.errorKind ?? "threw" };
}

/** Cut a long text (a tool's output or error) so it cannot blow the model's context; says what was cut. */
export function truncateOutput(text: string, limit: number): string {
  if (text.length <= limit) return text;
  return `${text.slice(0, limit)}\n[output truncated: ${text.length - limit} of ${text.length} characters omitted]`;
}
