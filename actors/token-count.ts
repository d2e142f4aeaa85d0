import { createRequire } from "node:module";
import { isMissing, OptionalPeerMissingError } from "../tools/optional-peer.js";
import type { Message } from "./messages.js";

/**
 * Token counts for keeping a prompt under `config.context.maxTokens`, with gpt-tokenizer (the
 * o200k_base encoding of current OpenAI models; other models' tokenizers differ by a few percent,
 * which the limit's margin absorbs). The tokenizer's tables are large, so they load on first use:
 * `import "jianmu"` does not pay for them, only a machine with `config.context` does.
 */

type CountTokens = (text: string) => number;
let countTokens: CountTokens | undefined;

function counter(): CountTokens {
  if (!countTokens) {
    let tokenizer: { countTokens: CountTokens };
    try {
      tokenizer = createRequire(import.meta.url)("gpt-tokenizer/encoding/o200k_base") as { countTokens: CountTokens };
    } catch (error) {
      if (isMissing(error, "gpt-tokenizer")) throw new OptionalPeerMissingError("config.context", "gpt-tokenizer", "npm install gpt-tokenizer", { cause: error });
      throw new Error(`config.context counts tokens with the gpt-tokenizer package, which could not be loaded: ${error instanceof Error ? error.message.split("\n")[0] : String(error)}`, { cause: error });
    }
    countTokens = tokenizer.countTokens;
  }
  return countTokens;
}

/** Load the tokenizer now (a machine with `config.context` does, so a missing package fails when it is made). */
export function loadTokenizer(): void {
  counter();
}

/** Tokens of a text. */
export function tokensOf(text: string): number {
  return text === "" ? 0 : counter()(text);
}

/** The chat format's framing of each message (role, separators), as OpenAI documents it. */
const PER_MESSAGE = 4;
/** Messages never change once in the history: each is counted once. */
const counted = new WeakMap<Message, number>();

export function messageTokens(message: Message): number {
  const known = counted.get(message);
  if (known !== undefined) return known;
  let tokens = PER_MESSAGE + tokensOf(message.content ?? "");
  if (message.role === "assistant") for (const call of message.toolCalls ?? []) tokens += 3 + tokensOf(call.name) + tokensOf(call.arguments);
  if (message.role === "tool" && message.name !== undefined) tokens += tokensOf(message.name);
  counted.set(message, tokens);
  return tokens;
}

/** The prompt's size: its messages plus what the request adds besides them (system prompt, tool schemas). */
export function promptTokens(messages: readonly Message[], overhead: number): number {
  let total = overhead + 3;
  for (const message of messages) total += messageTokens(message);
  return total;
}
