/**
 * Text from models, tools and callers can hold anything a JavaScript string can: a NUL (any web page
 * or file may carry one) or half of a surrogate pair (a string cut in the middle of an emoji).
 * Databases refuse some of it: PostgreSQL `text` refuses NUL, `jsonb` refuses `\u0000` and unpaired
 * surrogates. A run whose output holds one must not become a run that can never be finished.
 *
 * Values are stored as JSON text (`JSON.stringify`), which writes both as ASCII escapes, so every
 * store keeps them exactly as they were (PostgreSQL since migration 2 keeps JSON in `text` columns).
 * The few plain strings used as keys (a model's tool call id) go through `storableKey`.
 */

/** A NUL, or a surrogate without its partner. */
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

export function isStorableText(text: string): boolean {
  return !UNSTORABLE.test(text);
}

/**
 * A key (compared, never read back) any text column accepts: the text itself when it is storable
 * and does not start with a double quote, else its JSON form (which does). One-to-one, so two
 * different keys never meet.
 */
export function storableKey(text: string): string {
  return isStorableText(text) && !text.startsWith('"') ? text : JSON.stringify(text);
}
