import { z } from "zod";
import { JianmuError } from "../../tools/jianmu-error.js";
import { builtOnce } from "../../tools/built-once.js";

/** A built-in guard was given options it cannot work with. Names the guard and the field. */
export class GuardOptionsError extends JianmuError {
  static override readonly errorCode = "GUARD_OPTIONS_ERROR";
  override name = "GuardOptionsError";
  constructor(
    readonly guard: string,
    readonly field: string,
    problem: string,
  ) {
    super(`${guard}: ${field} ${problem}`);
  }
}

/**
 * Check a guard's options once, when the guard is built, so a typo fails at start-up instead of
 * silently letting every call through. The first problem is reported with its full field path.
 */
export function parseGuardOptions<S extends z.ZodType>(guard: string, schema: S, raw: unknown): z.output<S> {
  const parsed = schema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const field = ["options", ...issue.path.map(String)].join(".");
  if (issue.code === "unrecognized_keys" && schema instanceof z.ZodObject) {
    // Most often a typo: say what the guard does accept.
    const known = Object.keys(schema.shape).join(", ");
    throw new GuardOptionsError(guard, field, `has unknown ${issue.keys.length === 1 ? "key" : "keys"} ${issue.keys.map((k) => `"${k}"`).join(", ")} (known: ${known})`);
  }
  throw new GuardOptionsError(guard, field, `is invalid: ${issue.message}`);
}

// The option schemas are built when a guard is first built (`builtOnce`), not on `import "jianmu"`.
export const ToolNameSchema = builtOnce(() => z.string().min(1, "a tool name must be a non-empty string"));

export const ToolNamesSchema = builtOnce(() => z.array(ToolNameSchema()).min(1, "list at least one tool name"));

/** A custom text for the model to read instead of a guard's default reason. */
export const ReasonSchema = builtOnce(() => z.string().min(1, "a reason must be a non-empty string (or leave it out for the default)"));

/** "1 time", "3 times": reasons are read by the model, so they should read like a sentence. */
export function times(count: number): string {
  return count === 1 ? "1 time" : `${count} times`;
}
