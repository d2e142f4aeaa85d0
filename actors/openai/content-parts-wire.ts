import { ContentPartError, unresolvedBlob } from "../content-capabilities.js";
import { dataUrlOf, describePart, inlineData, isAudioType } from "../content-parts.js";
import type { ContentPart, MediaPart } from "../messages.js";

/*
 * Content parts in each OpenAI API's wire form, one function per API. What an API cannot carry at
 * all (a document by URL in Chat Completions, audio in the Responses API, audio other than wav or
 * mp3) is a `ContentPartError` naming the part and the fix, thrown while the request is built, so
 * it never reaches the server. Which parts a model takes is decided before that (content-capabilities.ts).
 */

/** A part of a Chat Completions user message. */
export type ChatContentPart =
  | { type: "text"; text: string }
  | { type: "image_url"; image_url: { url: string; detail?: "auto" | "low" | "high" } }
  | { type: "file"; file: { file_data: string; filename: string } }
  | { type: "input_audio"; input_audio: { data: string; format: "wav" | "mp3" } };

/** A part of a Responses API input message (and of a `function_call_output`'s output list). */
export type ResponsesContentPart =
  | { type: "input_text"; text: string }
  | { type: "input_image"; image_url: string; detail: "auto" | "low" | "high" }
  | { type: "input_file"; file_data: string; filename: string }
  | { type: "input_file"; file_url: string; filename?: string };

/** `place(i)` names part i in an error (`messages[3] (user) part 2`). */
export type PartPlace = (index: number) => string;

/** Parts for Chat Completions: `image_url`, `file` (documents as data), `input_audio` (wav or mp3 as base64). */
export function toChatParts(parts: readonly ContentPart[], place: PartPlace): ChatContentPart[] {
  const out: ChatContentPart[] = new Array(parts.length);
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    if (part.type === "text") {
      out[i] = { type: "text", text: part.text };
      continue;
    }
    const url = sourceUrl(part, place(i));
    if (part.type === "image") {
      out[i] = { type: "image_url", image_url: part.detail !== undefined ? { url, detail: part.detail } : { url } };
    } else if (isAudioType(part.mediaType)) {
      const inline = inlineData(part);
      if (inline === undefined) throw refused(place(i), part, "Chat Completions takes audio only as data, not by URL: download it and pass data (base64) with mediaType");
      out[i] = { type: "input_audio", input_audio: { data: inline.data, format: audioFormat(part, place(i)) } };
    } else {
      if (!url.startsWith("data:")) {
        throw refused(place(i), part, 'Chat Completions takes a document only as data, not by URL: download it and pass data (base64) with mediaType, or use the Responses API (api: "responses"), which takes file URLs');
      }
      out[i] = { type: "file", file: { file_data: url, filename: filenameOf(part) } };
    }
  }
  return out;
}

/** Parts for the Responses API: `input_text`, `input_image`, `input_file` (data or URL). It takes no audio. */
export function toResponsesParts(parts: readonly ContentPart[], place: PartPlace): ResponsesContentPart[] {
  const out: ResponsesContentPart[] = new Array(parts.length);
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    if (part.type === "text") {
      out[i] = { type: "input_text", text: part.text };
      continue;
    }
    const url = sourceUrl(part, place(i));
    if (part.type === "image") {
      out[i] = { type: "input_image", image_url: url, detail: part.detail ?? "auto" };
    } else if (isAudioType(part.mediaType)) {
      throw refused(place(i), part, 'the Responses API takes no audio input: use Chat Completions (api: "chat") with an audio model such as gpt-4o-audio-preview');
    } else if (url.startsWith("data:")) {
      out[i] = { type: "input_file", file_data: url, filename: filenameOf(part) };
    } else {
      out[i] = part.filename !== undefined ? { type: "input_file", file_url: url, filename: part.filename } : { type: "input_file", file_url: url };
    }
  }
  return out;
}

const AUDIO_TYPES = { wav: "audio/wav", mp3: "audio/mpeg" } as const;

/**
 * The reverse of `toChatParts`, for a stored transcript or a recorded request: each part the
 * Chat API defines becomes ours (a `file` part's data: URL keeps its media type); an unknown part
 * type is kept as a text part naming it, not dropped without a trace.
 */
export function fromChatParts(parts: readonly Record<string, unknown>[]): ContentPart[] {
  return parts.map((wire): ContentPart => {
    const image = wire["image_url"] as { url?: unknown; detail?: unknown } | undefined;
    const file = wire["file"] as { file_data?: unknown; filename?: unknown } | undefined;
    const audio = wire["input_audio"] as { data?: unknown; format?: unknown } | undefined;
    switch (wire["type"]) {
      case "text":
        return { type: "text", text: typeof wire["text"] === "string" ? wire["text"] : "" };
      case "image_url":
        if (typeof image?.url === "string") {
          const detail = image.detail === "low" || image.detail === "high" || image.detail === "auto" ? image.detail : undefined;
          return detail !== undefined ? { type: "image", url: image.url, detail } : { type: "image", url: image.url };
        }
        break;
      case "file":
        if (typeof file?.file_data === "string" && file.file_data.startsWith("data:")) {
          const mediaType = /^data:([^;,]+)/.exec(file.file_data)?.[1] ?? "application/octet-stream";
          return { type: "file", url: file.file_data, mediaType, ...(typeof file.filename === "string" ? { filename: file.filename } : {}) };
        }
        break;
      case "input_audio":
        if (typeof audio?.data === "string" && (audio.format === "wav" || audio.format === "mp3")) {
          return { type: "file", data: audio.data, mediaType: AUDIO_TYPES[audio.format] };
        }
        break;
    }
    return { type: "text", text: `[${String(wire["type"])} part]` };
  });
}

/** The part's content as a URL: its own (http or data:), or its bytes as a data: URL. */
function sourceUrl(part: MediaPart, place: string): string {
  if (part.blob !== undefined) throw unresolvedBlob(place, part.blob);
  return dataUrlOf(part) ?? part.url!;
}

function refused(place: string, part: MediaPart, why: string): ContentPartError {
  return new ContentPartError(place, `${place} (${describePart(part)}) cannot be sent: ${why}`);
}

const AUDIO_FORMATS: Record<string, "wav" | "mp3"> = {
  "audio/wav": "wav",
  "audio/x-wav": "wav",
  "audio/wave": "wav",
  "audio/vnd.wave": "wav",
  "audio/mpeg": "mp3",
  "audio/mp3": "mp3",
  "audio/mpeg3": "mp3",
  "audio/x-mpeg-3": "mp3",
};

function audioFormat(part: MediaPart, place: string): "wav" | "mp3" {
  const format = AUDIO_FORMATS[(part.mediaType ?? "").toLowerCase()];
  if (format === undefined) throw refused(place, part, "Chat Completions takes audio as wav (audio/wav) or mp3 (audio/mpeg) only: convert it first");
  return format;
}

/** OpenAI wants a name with a document's data; one is made from the media type when the part has none. */
function filenameOf(part: MediaPart): string {
  if (part.type === "file" && part.filename !== undefined) return part.filename;
  const subtype = (part.mediaType ?? "").split("/")[1]?.split(/[+;]/)[0];
  return `document.${subtype && /^[a-z0-9.-]+$/i.test(subtype) ? subtype : "bin"}`;
}
