import { randomBytes } from "node:crypto";

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/**
 * An id for a tool call the server sent without one (Gemini's compatible endpoint sends `id: ""`,
 * some streams never send one). The `tool` message that answers the call must carry an id, and
 * servers accept one we invent, so we mint it in OpenAI's own shape: `call_` + 24 characters.
 */
export function syntheticToolCallId(): string {
  const bytes = randomBytes(24);
  let suffix = "";
  for (const byte of bytes) suffix += ALPHABET[byte % ALPHABET.length];
  return `call_${suffix}`;
}

/** A tool call as assembled from the wire, before it is handed on. */
export interface WireToolCall {
  id: string;
  name: string;
  arguments: string;
}

/**
 * Give a call its final form: a real id (minted when the server sent none) and arguments that
 * parse ("" from a tool without parameters becomes "{}"; anything else stays verbatim so a
 * malformed JSON reaches the tool executor, which turns it into an observation). Takes the parts
 * rather than a call, so readers build each call once.
 */
export function finalToolCall(id: string, name: string, args: string): WireToolCall {
  return {
    id: id !== "" ? id : syntheticToolCallId(),
    name,
    arguments: args.trim() === "" ? "{}" : args,
  };
}
