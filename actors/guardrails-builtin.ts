import { defineGuardrail, type Guardrail, type GuardrailMode, type GuardrailSubject, type GuardrailVerdict } from "./guardrail.js";

/** What the built-in guardrails share: a name, the input mode, and what a hit does. */
export interface BuiltinGuardrailOptions {
  /** Default: the guardrail's kind (`maxLength`, `blocklist`). */
  name?: string;
  /** As an input guardrail: before the first model call (default) or beside it. */
  mode?: GuardrailMode;
  /** `trip` (default): the run fails; `retry`: the model is told what is wrong and answers again (for output guardrails). */
  onHit?: "trip" | "retry";
}

function hit(options: BuiltinGuardrailOptions, why: string, fix: string): GuardrailVerdict {
  return options.onHit === "retry" ? { verdict: "retry", feedback: `${why}; ${fix}` } : { verdict: "trip", reason: why };
}

const what = (subject: GuardrailSubject) => (subject.stage === "input" ? "the input" : "the answer");

function builtin(kind: string, options: BuiltinGuardrailOptions, check: (subject: GuardrailSubject) => GuardrailVerdict): Guardrail {
  return defineGuardrail({ name: options.name ?? kind, ...(options.mode !== undefined ? { mode: options.mode } : {}), check });
}

/** Trips when the text is longer than `max` characters. */
export function maxLength(max: number, options: BuiltinGuardrailOptions = {}): Guardrail {
  if (!Number.isSafeInteger(max) || max < 1) throw new TypeError(`maxLength: max must be a positive whole number of characters, got ${String(max)}`);
  return builtin("maxLength", options, (subject) =>
    subject.text.length <= max
      ? { verdict: "pass" }
      : hit(options, `${what(subject)} is ${subject.text.length} characters long, over the limit of ${max}`, `keep it under ${max} characters`),
  );
}

/**
 * Trips when the text contains a blocked term: a string is a keyword, matched case-insensitively
 * (as a whole word when it starts and ends with a letter or digit); a RegExp is matched as it is.
 * The reason names the term, never the text that matched (which may be what must not spread).
 */
export function blocklist(terms: readonly (string | RegExp)[], options: BuiltinGuardrailOptions = {}): Guardrail {
  if (!Array.isArray(terms) || terms.length === 0) throw new TypeError("blocklist: terms must be a non-empty array of strings and RegExps");
  const patterns = terms.map((term, index) => {
    if (term instanceof RegExp) return { shown: String(term), pattern: new RegExp(term.source, term.flags.replace(/[gy]/g, "")) };
    if (typeof term !== "string" || term.trim() === "") throw new TypeError(`blocklist: terms[${index}] must be a non-empty string or a RegExp`);
    const escaped = term.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    const start = /^\w/.test(term) ? "\\b" : "";
    const end = /\w$/.test(term) ? "\\b" : "";
    return { shown: JSON.stringify(term), pattern: new RegExp(`${start}${escaped}${end}`, "iu") };
  });
  return builtin("blocklist", options, (subject) => {
    const found = patterns.find(({ pattern }) => pattern.test(subject.text));
    return found ? hit(options, `${what(subject)} contains the blocked term ${found.shown}`, "leave it out") : { verdict: "pass" };
  });
}
