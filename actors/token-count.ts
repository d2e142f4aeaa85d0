import { createRequire } from "node:module";
import { isMissing, OptionalPeerMissingError } from "../tools/optional-peer.js";
import type { Message, PartsContent } from "./messages.js";
import { inlineData, mediaKindOf } from "./content-parts.js";
import { base64Bytes } from "../tools/byte-size.js";

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

/** Whether the tokenizer can be loaded (budgets count with it when it can, and fall back to bytes when not). */
export function tokenizerAvailable(): boolean {
  if (available === undefined) {
    try {
      counter();
      available = true;
    } catch {
      available = false;
    }
  }
  return available;
}
let available: boolean | undefined;

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
  const content = message.content ?? "";
  let tokens = PER_MESSAGE + (typeof content === "string" ? tokensOf(content) : partsTokens(content));
  if (message.role === "assistant") for (const call of message.toolCalls ?? []) tokens += 3 + tokensOf(call.name) + tokensOf(call.arguments);
  if (message.role === "tool" && message.name !== undefined) tokens += tokensOf(message.name);
  counted.set(message, tokens);
  return tokens;
}

/**
 * Images and files cannot be counted without the server's own rules, so they are estimated on the
 * high side (a limit reached early compacts early, one missed is a failed call): an image as 765
 * tokens (what OpenAI charges for 1024×1024 at high detail), a document as a token per 4 bytes, audio
 * as a token per 1,000 bytes (about 10 tokens a second of compressed speech), a URL's content as one image.
 */
const IMAGE_TOKENS = 765;

function partsTokens(parts: Exclude<PartsContent, string>): number {
  let tokens = 0;
  for (const part of parts) {
    if (part.type === "text") {
      tokens += tokensOf(part.text);
      continue;
    }
    const inline = inlineData(part);
    const kind = mediaKindOf(part);
    if (kind === "image" || inline === undefined) tokens += IMAGE_TOKENS;
    else tokens += Math.ceil(base64Bytes(inline.data) / (kind === "audio" ? 1_000 : 4));
  }
  return tokens;
}

/** The prompt's size: its messages plus what the request adds besides them (system prompt, tool schemas). */
export function promptTokens(messages: readonly Message[], overhead: number): number {
  let total = overhead + 3;
  for (const message of messages) total += messageTokens(message);
  return total;
}
