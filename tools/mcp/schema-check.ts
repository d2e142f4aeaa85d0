import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import type { JsonSchemaType } from "@modelcontextprotocol/sdk/validation/types.js";
import type { ArgsCheck, JsonSchema } from "../tool.js";

/** The SDK's own Ajv setup (draft-07, formats, all errors): the same checks it uses for tool output. */
const validators = new AjvJsonSchemaValidator();

/**
 * The schema as the model should see it. `$schema` goes: it names a dialect the model API does
 * not need, and Ajv (draft-07) refuses to compile a schema declaring 2020-12.
 */
export function modelSchema(inputSchema: Record<string, unknown>): JsonSchema {
  const { $schema: _dialect, ...rest } = inputSchema;
  return { ...rest, type: "object" };
}

/**
 * A checker for a tool's arguments, built once per tool. A schema Ajv cannot compile (a broken
 * `$ref`, say) falls back to checking only that the arguments are an object; the server still
 * validates them itself.
 */
export function argsChecker(schema: JsonSchema): (args: unknown) => ArgsCheck {
  let validate: ((input: unknown) => { valid: boolean; errorMessage?: string | undefined }) | undefined;
  // Without its $id: the validator caches by $id, and two servers may well reuse one.
  const { $id: _id, ...anonymous } = schema;
  try {
    validate = validators.getValidator(anonymous as JsonSchemaType);
  } catch {
    validate = undefined;
  }
  return (args) => {
    if (args === null || typeof args !== "object" || Array.isArray(args)) {
      return { ok: false, error: "(arguments): must be a JSON object" };
    }
    if (!validate) return { ok: true, value: args as Record<string, unknown> };
    const result = validate(args);
    return result.valid ? { ok: true, value: args as Record<string, unknown> } : { ok: false, error: readableAjvText(result.errorMessage ?? "invalid") };
  };
}

/** Ajv says "data/a/0 must be number, data must have ..."; say "a.0: must be number; (arguments): must have ...". */
export function readableAjvText(text: string): string {
  return text.replace(/(^|, )data(\/\S*)? /g, (_match, sep: string, path: string | undefined) => {
    const where = path ? path.slice(1).split("/").join(".") : "(arguments)";
    return `${sep === "" ? "" : "; "}${where}: `;
  });
}
