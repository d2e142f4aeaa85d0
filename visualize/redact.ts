import { secretRedactor } from "../actors/openai/redact.js";
import { TERMINATION_REASONS } from "../machines/contract/termination-reasons.js";
import { isPlainObject, type Plain } from "./plain.js";

/**
 * What leaves the process (to an inspector, into a recording file) is scrubbed here.
 * Secrets are always removed: by key name (apiKey, authorization, password, headers, ...) and by
 * value pattern (`sk-...`, `Bearer ...`, and any secret the caller names). Prompt text (message
 * contents, system prompts, streamed deltas, tool arguments and outputs, reasoning items) is replaced by its length
 * when `omitText` is set, which the inspector does by default: it keeps state names, event types,
 * ids and counts, which is what a statechart inspector is for.
 */
export interface RedactOptions {
  /** Exact secret strings to remove wherever they appear (e.g. the key your app resolved). */
  secrets?: readonly (string | undefined)[];
  /** Replace prompt text by a placeholder with its length. */
  omitText?: boolean;
  /** Cut longer strings (after redaction), noting how much was cut. Unlimited when unset. */
  maxTextChars?: number;
}

export const SECRET_PLACEHOLDER = "‹secret›";
const PLACEHOLDER = /^‹(?:secret|headers(?: \d+)?|text \d+ chars|omitted [a-z0-9 ]+)›$/;

/** Key names whose values are credentials (compared lowercased, without '-', '_' or spaces). */
const SECRET_KEY_PARTS = [
  "apikey",
  "authorization",
  "password",
  "passwd",
  "secret",
  "privatekey",
  "accesstoken",
  "refreshtoken",
  "sessiontoken",
  "idtoken",
  "bearertoken",
  "authtoken",
  "credential",
];
const SECRET_KEYS_EXACT = new Set(["auth", "token", "cookie", "setcookie", "xapikey"]);
/** Request and response headers carry auth; they are never needed to understand a run. */
const HEADER_KEYS = new Set(["headers", "requestheaders", "responseheaders", "defaultheaders"]);

/** Keys whose string values are prompt text (or derived from it). */
const TEXT_KEYS = new Set([
  "content",
  "systemprompt",
  "system",
  "prompt",
  "delta",
  "streamingoutput",
  "finalanswer",
  "textoutput",
  "skillresult",
  "reasoning",
  "refusal",
  "arguments",
  "editedarguments",
  // a structured output's text as the model wrote it (loop.output, termination.raw)
  "raw",
  "output",
  "text",
  "description",
  // a guardrail's feedback to the model, a termination's detail (a guardrail's reason, a cancel's)
  "feedback",
  "detail",
]);
/**
 * `reason` is prompt text too (a guardrail's or a guard's reason, often quoting the input or the
 * arguments), except where it names why a run ended (`termination.reason`, `loop.terminated.reason`):
 * those are kept, they are what the inspector is for.
 */
const REASON_KEY = "reason";
const TERMINATION_REASON_NAMES: ReadonlySet<string> = new Set(TERMINATION_REASONS);
/** Keys whose values (of any shape) are user-provided tool arguments, or a structured output as it streams (`output.partial`). */
const ARGS_KEYS = new Set(["args", "partial"]);
/** A reasoning model's reasoning items (their summaries and encrypted content are the model's thoughts about the prompt). */
const REASONING_KEYS = new Set(["reasoningitems"]);

function normalizeKey(key: string): string {
  return key.toLowerCase().replace(/[-_\s]/g, "");
}

export function isSecretKey(key: string): boolean {
  const k = normalizeKey(key);
  return SECRET_KEYS_EXACT.has(k) || SECRET_KEY_PARTS.some((part) => k.includes(part));
}

const EXTRA_PATTERNS: readonly RegExp[] = [
  /\bAIza[0-9A-Za-z_-]{30,}/g, // Google API keys
  /\bgh[pousr]_[A-Za-z0-9]{30,}/g, // GitHub tokens
  /\bxox[abprs]-[A-Za-z0-9-]{10,}/g, // Slack tokens
  /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g, // AWS access key ids
];

/** A function that removes secret-looking substrings and the named secrets from a string. */
export function textScrubber(secrets: readonly (string | undefined)[] = []): (text: string) => string {
  const base = secretRedactor(secrets);
  return (text) => {
    let out = base(text);
    for (const pattern of EXTRA_PATTERNS) out = out.replace(pattern, SECRET_PLACEHOLDER);
    return out;
  };
}

function cut(text: string, max: number | undefined): string {
  if (max === undefined || text.length <= max) return text;
  return `${text.slice(0, max)}… [${text.length - max} more chars]`;
}

/** Redacts plain data; `key` is the name the value is stored under, when it has one. */
export type Redactor = (value: Plain, key?: string) => Plain;

/** Build a redactor for plain data (see `toPlain`). The input is not modified. */
export function createRedactor(options: RedactOptions = {}): Redactor {
  const scrubText = textScrubber(options.secrets ?? []);
  const omitText = options.omitText === true;
  const max = options.maxTextChars;

  const visit = (value: Plain, key: string | undefined): Plain => {
    const k = key === undefined ? undefined : normalizeKey(key);
    if (key !== undefined && isSecretKey(key)) return value === null || value === "" ? value : SECRET_PLACEHOLDER;
    if (k !== undefined && HEADER_KEYS.has(k) && value !== null && typeof value === "object") {
      return `‹headers ${Array.isArray(value) ? value.length : Object.keys(value).length}›`;
    }
    if (typeof value === "string") {
      if (PLACEHOLDER.test(value)) return value;
      if (omitText && k !== undefined && (TEXT_KEYS.has(k) || (k === REASON_KEY && !TERMINATION_REASON_NAMES.has(value)))) return `‹text ${value.length} chars›`;
      return cut(scrubText(value), max);
    }
    if (omitText && k !== undefined && ARGS_KEYS.has(k) && value !== null && typeof value === "object") return "‹omitted tool arguments›";
    if (omitText && k !== undefined && REASONING_KEYS.has(k) && value !== null && typeof value === "object") return "‹omitted reasoning items›";
    if (Array.isArray(value)) return value.map((item) => visit(item, undefined));
    if (isPlainObject(value)) {
      const out: { [key: string]: Plain } = {};
      for (const [childKey, child] of Object.entries(value)) out[childKey] = visit(child, childKey);
      return out;
    }
    return value;
  };
  return (value, key) => visit(value, key);
}

/** Redact a value that lives at `path` inside a larger object (a secret anywhere on the path hides it). */
export function redactAt(redact: Redactor, path: readonly (string | number)[], value: Plain): Plain {
  for (const segment of path) {
    if (typeof segment === "string" && (isSecretKey(segment) || HEADER_KEYS.has(normalizeKey(segment)))) return SECRET_PLACEHOLDER;
  }
  const last = path[path.length - 1];
  return redact(value, typeof last === "string" ? last : undefined);
}
