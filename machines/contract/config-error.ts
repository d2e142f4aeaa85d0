import { JianmuError } from "../../tools/jianmu-error.js";

/** A config value that is not valid. Names the field, the value and the file it came from. */
export class ConfigError extends JianmuError {
  static override readonly errorCode = "CONFIG_ERROR";
  override name = "ConfigError";
  constructor(
    readonly field: string,
    readonly value: unknown,
    readonly source: string,
    problem: string,
  ) {
    super(`${source}: ${field} = ${formatValue(value)} is invalid: ${problem}`);
  }
}

/** A field that no longer exists: the error says what to write instead, and why. */
export function removedFieldError(field: string, value: unknown, source: string, replacement: string, why: string): ConfigError {
  const error = new ConfigError(field, value, source, `removed: use ${replacement} (${why})`);
  error.message = `${source}: ${field} was removed: use ${replacement} (${why})`;
  return error;
}

function formatValue(value: unknown): string {
  if (value === undefined) return "(missing)";
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}
