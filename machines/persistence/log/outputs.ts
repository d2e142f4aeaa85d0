import type { AgentOutput } from "../../contract/context.js";
import { DamagedSkeleton, encodeValue, type KnownStream, type StreamRef } from "./codec.js";
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

function parsed(text: string): Record<string, unknown> | undefined {
  try {
    const value = JSON.parse(text) as unknown;
    return value !== null && typeof value === "object" ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** The streams a stored output refers to ([] for a plain one): what a reader loads before `decodeOutput`. */
export function outputRefs(text: string): StreamRef[] {
  const value = parsed(text);
  if (value?.[MARK] !== 1) return [];
  try {
    return refsFromText(JSON.stringify(value.refs));
  } catch {
    throw new DamagedSkeleton("its stream list is not a list of [stream, count] pairs");
  }
}

/** The stored output put back; text that is not JSON comes back as it is, for the caller's schema to refuse. */
export function decodeOutput(text: string, streams: ReadonlyMap<number, KnownStream>): AgentOutput {
  const value = parsed(text);
  if (value === undefined) return text as unknown as AgentOutput;
  if (value[MARK] !== 1) return value as unknown as AgentOutput;
  return decodeSkeleton(String(value.skeleton), outputRefs(text), streams).value as AgentOutput;
}
