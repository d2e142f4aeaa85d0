import { z } from "zod";
import { MessageSchema, ToolCallSchema } from "../../actors/messages.js";
import { UsageSchema } from "../../actors/usage.js";

/**
 * The state contract (contract section 5). Each field declares how long its value lives:
 * - `step`: cleared at the start of every loop iteration (e.g. `actions`, so old calls never run twice);
 * - `run`: reset to its default at the start of every fresh run, kept when a run is restored
 *   from a snapshot (first-round behaviour such as `toolChoice` depends on `rounds`);
 * - `persistent`: survives runs; with the `append` reducer, writes add to the end instead of replacing.
 */
export type Lifetime = "step" | "run" | "persistent";

export interface FieldMeta {
  lifetime: Lifetime;
  reducer?: "append";
}

/** Where lifetimes live: a zod registry keyed by the field schemas themselves (it survives `.extend`). */
export const stateFields = z.registry<FieldMeta>();

function declare<T extends z.ZodType>(schema: T, meta: FieldMeta): T {
  stateFields.add(schema, meta);
  return schema;
}

/** Declare a field cleared every iteration. The schema should have a default (the cleared value). */
export const stepField = <T extends z.ZodType>(schema: T): T => declare(schema, { lifetime: "step" });
/** Declare a field reset at the start of every fresh run. */
export const runField = <T extends z.ZodType>(schema: T): T => declare(schema, { lifetime: "run" });
/** Declare a field that survives runs. */
export const persistentField = <T extends z.ZodType>(schema: T): T => declare(schema, { lifetime: "persistent" });
/** Declare a persistent list that writes append to. */
export const appendField = <T extends z.ZodType>(schema: T): T => declare(schema, { lifetime: "persistent", reducer: "append" });

// Defined with the actors, which report usage first; the host state's `usage` field is the same shape.
export { UsageSchema };

/**
 * The ReAct fields. Extend it with your own: `ReActState.extend({ task: runField(z.string().default("")) })`
 * and pass the result as `createReactMachine({ stateSchema })`. Fields without a declared lifetime
 * are persistent.
 */
export const ReActState = z.object({
  messages: appendField(z.array(MessageSchema).default([])),
  actions: stepField(z.array(ToolCallSchema).default([])),
  done: runField(z.boolean().default(false)),
  finalAnswer: runField(z.string().nullable().default(null)),
  rounds: runField(z.number().int().min(0).default(0)),
  usage: runField(UsageSchema.default({ promptTokens: 0, completionTokens: 0, totalTokens: 0 })),
  streamingOutput: runField(z.string().default("")),
  toolEffects: persistentField(z.array(z.string()).default([])),
  textOutput: runField(z.string().nullable().default(null)),
  skillResult: runField(z.unknown().default(null)),
});
export type ReActStateShape = z.output<typeof ReActState>;

/** A state schema usable by the machine: the ReAct fields plus any of the user's. */
export type StateSchema = z.ZodObject<typeof ReActState.shape & z.ZodRawShape>;

export const REACT_FIELDS = Object.keys(ReActState.shape) as (keyof ReActStateShape)[];
export type ReActField = keyof ReActStateShape;

/** Maps each ReAct field to the (dotted) path of the host-state field that holds it. */
export const StateKeysSchema = z
  .object(Object.fromEntries(REACT_FIELDS.map((field) => [field, z.string().regex(/^[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*$/, "must be a field name or dotted path like llm.usage").optional()])) as Record<ReActField, z.ZodOptional<z.ZodString>>)
  .strict();
export type StateKeys = z.infer<typeof StateKeysSchema>;

export function fieldMeta(schema: z.ZodType): FieldMeta {
  return stateFields.get(schema) ?? { lifetime: "persistent" };
}
