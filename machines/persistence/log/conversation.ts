import { MessageSchema, type Message } from "../../../actors/messages.js";

/**
 * The message arrays in a saved snapshot's host state (`snapshot.context.state`), first found first:
 * where the conversation is when the machine is not at hand (its namespace and `config.keys` move it).
 */
export function conversationsIn(snapshot: Record<string, unknown>): Message[][] {
  const found: Message[][] = [];
  const visit = (node: unknown) => {
    if (Array.isArray(node)) {
      if (node.length > 0 && node.every((item) => MessageSchema.safeParse(item).success)) found.push(node as Message[]);
      return;
    }
    if (node !== null && typeof node === "object") for (const value of Object.values(node)) visit(value);
  };
  visit((snapshot.context as { state?: unknown } | undefined)?.state);
  return found;
}
