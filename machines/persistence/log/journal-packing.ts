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
