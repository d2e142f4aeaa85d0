import { z } from "zod";

/*
 * The events users send to a running agent, checked at the boundary. `actor.send` takes anything
 * at run time (a callId that is a number, a Symbol, a null-prototype object; a reason that is an
 * object), and whatever a command carries ends up in context, in emitted events and in the next
 * checkpoint. So every command is parsed here first: one that does not fit is refused with an
 * event naming the field, and never touches context.
 */

/** Longest `reason` kept: it goes into context, every later checkpoint and the model's prompt. */
export const MAX_REASON_CHARS = 10_000;
/** Longest edited arguments kept (as JSON text). */
export const MAX_ARGS_CHARS = 1_000_000;

/**
 * The way from the top agent down to a nested one (an `agentTool` or `handoff` target), outermost
 * first: one entry per level below the top. `agent` is the nested agent's machine name, `callId` the
 * id of the tool call in the level above that started it. Telemetry of nested agents is re-emitted by
 * each parent with this path; events of the top agent carry none.
 */
export const AgentPathSchema = z.array(z.object({ agent: z.string().min(1), callId: z.string().min(1) }).strict());
export type AgentPath = z.infer<typeof AgentPathSchema>;

const CallIdSchema = z.string().min(1, "must be the call id of a pending approval (a non-empty string)");
const ReasonSchema = z.string().max(MAX_REASON_CHARS, `must be at most ${MAX_REASON_CHARS} characters`);

/** Edited arguments: a JSON object, or its text. Whatever is given must survive `JSON.stringify` unchanged in meaning. */
const ArgsSchema = z
  .union([z.string(), z.record(z.string(), z.unknown())])
  .superRefine((args, ctx) => {
    const problem = typeof args === "string" ? sizeProblem(args.length) : jsonProblem(args);
    if (problem !== undefined) ctx.addIssue({ code: "custom", message: problem });
  });

export const ApproveEventSchema = z.object({
  type: z.literal("guard.approve"),
  callId: CallIdSchema,
  /** An object or JSON text; replaces the model's arguments after validation against the tool. */
  args: ArgsSchema.optional(),
  /** For a call of a nested agent: its `agentPath` (from `pendingApprovals`); without it the call is looked up by id. */
  agentPath: AgentPathSchema.optional(),
});
export const RejectEventSchema = z.object({
  type: z.literal("guard.reject"),
  callId: CallIdSchema,
  /** The model reads it. */
  reason: ReasonSchema.optional(),
  /** For a call of a nested agent: its `agentPath` (from `pendingApprovals`). */
  agentPath: AgentPathSchema.optional(),
});
export const CancelEventSchema = z.object({
  type: z.literal("agent.cancel"),
  reason: ReasonSchema.optional(),
});

/** Approve a pending call; `args` (an object or JSON text) replaces the model's arguments after validation. */
export type ApproveEvent = z.infer<typeof ApproveEventSchema>;
/** Reject a pending call; the model reads the reason. */
export type RejectEvent = z.infer<typeof RejectEventSchema>;
/** Stop the run from any state; in-flight model and tool calls are aborted. */
export type CancelEvent = z.infer<typeof CancelEventSchema>;

const SCHEMAS = {
  "guard.approve": ApproveEventSchema,
  "guard.reject": RejectEventSchema,
  "agent.cancel": CancelEventSchema,
} as const;

export type CommandType = keyof typeof SCHEMAS;

/**
 * Why a command event cannot be used as it is, naming the field and the fix; undefined when it
 * fits its schema. Never throws, whatever the event holds (a Proxy, throwing getters).
 */
export function commandShapeProblem(event: { type: CommandType }): string | undefined {
  try {
    const parsed = SCHEMAS[event.type].safeParse(event);
    if (parsed.success) return undefined;
    const issue = parsed.error.issues[0];
    if (!issue) return `${event.type}: the event does not fit its shape`;
    const field = issue.path.length > 0 ? issue.path.map(String).join(".") : "(event)";
    return `${event.type}: ${field} ${issue.message.replace(/^Invalid input: /, "")}; ${HINTS[event.type]}`;
  } catch {
    return `${event.type}: the event cannot be read (a field threw when read); ${HINTS[event.type]}`;
  }
}

const HINTS: Record<CommandType, string> = {
  "guard.approve": 'send { type: "guard.approve", callId: string, args?: object | JSON text, agentPath?: [{ agent, callId }] }',
  "guard.reject": 'send { type: "guard.reject", callId: string, reason?: string, agentPath?: [{ agent, callId }] }',
  "agent.cancel": 'send { type: "agent.cancel", reason?: string }',
};

/** The callId of a command as it may be shown in an event: itself when it is a string, else what it was. */
export function shownCallId(event: object): string {
  try {
    const callId: unknown = (event as { callId?: unknown }).callId;
    if (typeof callId === "string") return callId;
    if (callId === null) return "(null)";
    if (Array.isArray(callId)) return "(an array)";
    return `(${typeof callId})`;
  } catch {
    return "(unreadable)";
  }
}

function sizeProblem(length: number): string | undefined {
  return length > MAX_ARGS_CHARS ? `must be at most ${MAX_ARGS_CHARS} characters of JSON` : undefined;
}

/** Plain JSON only: no cycles, BigInt, functions, Symbols, throwing getters or toJSON, nor anything that JSON would silently drop. */
function jsonProblem(value: unknown): string | undefined {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (error) {
    return `must be plain JSON (${error instanceof Error ? error.message : "it cannot be encoded"})`;
  }
  if (text === undefined) return "must be plain JSON";
  return sizeProblem(text.length);
}
