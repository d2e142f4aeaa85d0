import { createHash } from "node:crypto";
import { deflateRawSync, inflateRawSync } from "node:zlib";
import type { ToolOutcome } from "../../../actors/tool-outcome.js";

/*
 * A journaled outcome as SQLite and PostgreSQL keep it: its JSON deflated. The journal repeats what
 * the tool returned (the conversation gets it again as the tool's message, one save later), and
 * nobody reads it but the executor, one row at a time; deflated, it costs a fraction of that.
 * Outcomes written by the release before are plain JSON (text, or PostgreSQL's jsonb) and read as such.
 */

export function packOutcome(outcome: ToolOutcome): Buffer {
  return deflateRawSync(Buffer.from(JSON.stringify(outcome), "utf8"));
}

/** The stored outcome as `journalEntryOf` reads it: packed bytes inflated to JSON text; text or a parsed value as they are. */
export function storedOutcome(stored: unknown): unknown {
  if (!(stored instanceof Uint8Array)) return stored;
  try {
    return inflateRawSync(stored).toString("utf8");
  } catch {
    // Damaged: journalEntryOf refuses it by name.
    return undefined;
  }
}

/*
 * PostgreSQL keeps a tool result once (migration 6): the journal holds the outcome without its
 * `content`, and the content (deflated) with the SHA-256 of its JSON text only until a save stores
 * the tool message whose content has that hash; that save replaces both by the message's place in
 * the log (stream and element), and a lookup reads the content back from there. Rows written before
 * keep the whole outcome.
 */

/** The journal's columns for an outcome: the rest deflated (`content` kept in its place, empty), the content's JSON text deflated, and that text's hash. */
export function packOutcomeApart(outcome: ToolOutcome): { packed: Buffer; content: Buffer; sha256: Buffer } {
  const text = JSON.stringify(outcome.content);
  return { packed: packOutcome({ ...outcome, content: "" }), content: deflateRawSync(Buffer.from(text, "utf8")), sha256: sha256Of(text) };
}

const sha256Of = (text: string): Buffer => createHash("sha256").update(text, "utf8").digest();

/**
 * The outcome as `journalEntryOf` reads it from the journal's columns: `content` (deflated JSON text) or, once a
 * save dropped it, `element` (the tool message's JSON text in the log); with neither, `packed` is a
 * whole outcome (a row written before migration 6). Undefined when damaged (journalEntryOf names it).
 */
export function outcomeApart(packed: Buffer, content: Buffer | null, element: string | null): unknown {
  const rest = storedOutcome(packed);
  if (content === null && element === null) return rest;
  try {
    const outcome = JSON.parse(rest as string) as Record<string, unknown>;
    outcome.content = content !== null ? JSON.parse(inflateRawSync(content).toString("utf8")) : (JSON.parse(element!) as { content?: unknown }).content;
    return outcome;
  } catch {
    return undefined;
  }
}

/** A tool message a save stores as element `seq` of `stream`: its call id and the SHA-256 of its content's JSON text, which the journal's matching row may drop. */
export interface StoredToolResult {
  callId: string;
  stream: number;
  seq: number;
  sha256: Buffer;
}

/** The tool messages with text content among the elements a save appends (JSON texts as the log stores them). */
export function toolResultsAmong(items: readonly { stream: number; seq: number; text: string }[]): StoredToolResult[] {
  const found: StoredToolResult[] = [];
  for (const { stream, seq, text } of items) {
    // Every message a chart writes starts with its role; only tool messages are parsed.
    if (!text.startsWith('{"role":"tool"')) continue;
    const message = JSON.parse(text) as { toolCallId?: unknown; content?: unknown };
    if (typeof message.toolCallId !== "string" || typeof message.content !== "string") continue;
    found.push({ callId: message.toolCallId, stream, seq, sha256: sha256Of(JSON.stringify(message.content)) });
  }
  return found;
}
