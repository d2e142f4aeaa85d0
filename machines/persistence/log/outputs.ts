import type { AgentOutput } from "../../contract/context.js";
import { encodeValue, type KnownStream, type StreamRef } from "./codec.js";
import { decodeSkeleton, refsFromText, type RunContext } from "./streams.js";

/*
 * The run queue records a finished run's output beside its last checkpoint. The output repeats the
 * conversation (`messages`, and `state` holds it again): stored as it is, it would write the whole
 * conversation twice more at the end of every run. So it is stored like a skeleton whose arrays
 * refer to the streams the final checkpoint already stored; an output that does not fit them (or
 * one written by an earlier release) is plain JSON.
 */

const MARK = "$log";

export function encodeOutput(output: AgentOutput, context: RunContext): string {
  const encoded = encodeValue(output, context);
  // Anything new to store would need writes of its own: then the plain output is as good.
  if (encoded.streams.length > 0 || encoded.items.length > 0 || encoded.refs.length === 0) return JSON.stringify(output);
  return JSON.stringify({ [MARK]: 1, refs: encoded.refs, skeleton: encoded.skeleton });
}

/** The stored output put back; text that is not JSON comes back as it is, for the caller's schema to refuse. */
export function decodeOutput(text: string, read: (refs: readonly StreamRef[]) => ReadonlyMap<number, KnownStream>): AgentOutput {
  let value: Record<string, unknown>;
  try {
    value = JSON.parse(text) as Record<string, unknown>;
  } catch {
    return text as unknown as AgentOutput;
  }
  if (value === null || typeof value !== "object" || value[MARK] !== 1) return value as unknown as AgentOutput;
  const refs = refsFromText(JSON.stringify(value.refs));
  return decodeSkeleton(String(value.skeleton), refs, read(refs)).value as AgentOutput;
}
