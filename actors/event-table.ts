import { z } from "zod";

/**
 * Events as a table: each event's `type` maps to a function that builds the zod schema of its
 * payload (the fields besides `type`). The event types are inferred from those schemas, and the
 * names are the keys, there without building anything. A schema is built only when something asks
 * for it (the tests): building zod schemas costs tens of microseconds each, every `import "jianmu"`
 * would pay for them, and the agent never parses its own events.
 */
export type EventTable = Record<string, () => z.ZodObject>;

/** One object type, not an intersection: what users see in their editor. */
type Flat<T> = { [K in keyof T]: T[K] };

/** The events of a table as one union, each `{ type }` plus its payload (plus `Extra`, when given). */
export type EventOf<T extends EventTable, Extra = unknown> = {
  [K in keyof T & string]: Flat<{ type: K } & z.infer<ReturnType<T[K]>> & Extra>;
}[keyof T & string];

/** The names of a table's events, in its order. */
export function eventTypes<T extends EventTable>(table: T): readonly (keyof T & string)[] {
  return Object.freeze(Object.keys(table) as (keyof T & string)[]);
}

/**
 * The whole table as one zod schema: a discriminated union on `type`, each payload extended with
 * the `base` fields. Built from the same factories the types are inferred from (the tests parse the
 * events of real runs with it), so the one assertion below restates what the factories say.
 */
export function tableSchema<T extends EventTable, Base extends z.ZodObject>(table: T, base: Base): z.ZodType<EventOf<T, z.infer<Base>>> {
  const [first, ...rest]: z.ZodObject[] = Object.entries(table).map(([type, payload]) => payload().extend({ type: z.literal(type), ...base.shape }));
  if (first === undefined) throw new TypeError("an event table needs at least one event");
  return z.discriminatedUnion("type", [first, ...rest]) as z.ZodType as z.ZodType<EventOf<T, z.infer<Base>>>;
}
