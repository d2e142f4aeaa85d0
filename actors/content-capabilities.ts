import { z } from "zod";
import { JianmuError } from "../tools/jianmu-error.js";
import { describePart, mediaKindOf, partPlace, type MediaKind } from "./content-parts.js";
import type { MediaPart, Message } from "./messages.js";

/**
 * Which content parts a model takes besides text. A part it cannot take is refused before the
 * request is sent (a `config` failure naming the part, the model and the fix), not left to the
 * server's HTTP 400 or, worse, silently dropped by a server that ignores what it does not know.
 */
export interface Accepts {
  image: boolean;
  /** Documents (PDF, ...): files whose media type is not audio/*. */
  file: boolean;
  /** Files whose media type is audio/*. */
  audio: boolean;
}

/** `accepts` as an option: each kind left out keeps the model's default (`defaultAccepts`). */
export const acceptsOptionSchema = () =>
  z
    .object({
      image: z.boolean({ error: "must be true or false" }).optional(),
      file: z.boolean({ error: "must be true or false" }).optional(),
      audio: z.boolean({ error: "must be true or false" }).optional(),
    })
    .strict();
export type AcceptsOption = Partial<Accepts>;

/** OpenAI models that read text only (the older chat models, the mini reasoning models, the open-weight ones). */
const TEXT_ONLY_MODELS = /^(gpt-3\.5|gpt-4(-\d{4})?$|gpt-4-32k|gpt-4-(0125|1106)-preview|o1-mini|o1-preview|o3-mini|gpt-oss|text-|davinci|babbage)/i;
/** OpenAI's audio models (gpt-4o-audio-preview, gpt-audio, ...) read text and audio, not images or documents. */
const AUDIO_MODELS = /audio/i;

/**
 * What a model takes unless `accepts` says otherwise. On api.openai.com: images and documents for
 * every current model but the text-only ones above, audio only for the audio models (they alone take
 * `input_audio`). Elsewhere (vLLM, Ollama, gateways): images (the vision models of those servers take
 * `image_url`; a text-only one needs `accepts: { image: false }` to be refused here), no documents
 * and no audio (the Chat Completions `file` and `input_audio` parts are OpenAI's own).
 */
export function defaultAccepts(model: string, host: string): Accepts {
  if (AUDIO_MODELS.test(model)) return { image: false, file: false, audio: true };
  const text = TEXT_ONLY_MODELS.test(model);
  if (host === "api.openai.com") return { image: !text, file: !text, audio: false };
  return { image: !text, file: false, audio: false };
}

/** The defaults for this model, with the kinds an option sets replaced. */
export function acceptsFor(model: string, host: string, option?: AcceptsOption): Accepts {
  const defaults = defaultAccepts(model, host);
  if (option === undefined) return defaults;
  return { image: option.image ?? defaults.image, file: option.file ?? defaults.file, audio: option.audio ?? defaults.audio };
}

/** The `code` of a `ModelError` whose request held a part its model or API cannot take. */
export const UNSUPPORTED_CONTENT = "unsupported_content";

/** A content part that cannot be sent as it is: says which part, to which model, and the fix. */
export class ContentPartError extends JianmuError {
  static override readonly errorCode = "CONTENT_PART_ERROR";
  override name = "ContentPartError";
  constructor(
    /** Where the part is: `messages[3] (user) part 2`. */
    readonly place: string,
    message: string,
  ) {
    super(message);
  }
}

/** A part that still names a stored blob: its bytes were never read back from the checkpoint store. */
export function unresolvedBlob(place: string, blob: string): ContentPartError {
  return new ContentPartError(
    place,
    `${place} refers to stored content (${blob}) that was not read back: a checkpoint keeps large images and files by reference; ` +
      "load it with loadCheckpoint(store, runId) (or resolveBlobs(record, store, runId)) before restoring the run",
  );
}

/** One image or file of a request, with where it is. */
export interface MediaUse {
  place: string;
  part: MediaPart;
  kind: MediaKind;
}

/**
 * The request's images and files, or undefined when it has none (the usual case: then nothing
 * else is looked at). Read once per call; each target checks it against what its model takes.
 */
export function mediaOf(messages: readonly Message[]): MediaUse[] | undefined {
  let uses: MediaUse[] | undefined;
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]!;
    const content = message.content;
    if (typeof content === "string" || content === null) continue;
    for (let p = 0; p < content.length; p++) {
      const part = content[p]!;
      if (part.type === "text") continue;
      (uses ??= []).push({ place: partPlace(i, message.role, p), part, kind: mediaKindOf(part) });
    }
  }
  return uses;
}

const KIND_WORDS: Record<MediaKind, { noun: string; reads: string }> = {
  image: { noun: "an image", reads: "reads images (e.g. gpt-4o-mini)" },
  file: { noun: "a document", reads: "reads documents (e.g. gpt-4o-mini on api.openai.com)" },
  audio: { noun: "audio", reads: "hears audio (e.g. gpt-4o-audio-preview)" },
};

/** The first part this model cannot take, as the error saying so; undefined when it takes them all. */
export function refusedMedia(uses: readonly MediaUse[], accepts: Accepts, target: { model: string; endpoint: string }): ContentPartError | undefined {
  const use = uses.find((candidate) => !accepts[candidate.kind]);
  if (use === undefined) return undefined;
  const words = KIND_WORDS[use.kind];
  const takes = (Object.keys(accepts) as MediaKind[]).filter((kind) => accepts[kind]);
  const what = takes.length === 0 ? "it takes text only" : `it takes text and ${takes.join(" and ")} only`;
  return new ContentPartError(
    use.place,
    `${use.place} is ${words.noun} (${describePart(use.part)}), which model ${target.model} at ${target.endpoint} cannot take: ${what}. ` +
      `Use a model that ${words.reads}, or, if this one does, pass accepts: { ${use.kind}: true } to ModelClient.resolve() (or to this fallback).`,
  );
}
