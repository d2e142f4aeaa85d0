import { base64Bytes, formatBytes } from "../tools/byte-size.js";
import type { MediaPart, PartsContent } from "./messages.js";

/*
 * What the rest of the code asks of a message's content (messages.ts defines it): its text, its
 * media parts, and how to name a part in an error or a summary. A string content is the common
 * case and costs nothing here.
 */

/** What a model must be able to read to take a part: `audio` is a file whose media type is audio/*. */
export type MediaKind = "image" | "file" | "audio";

export function mediaKindOf(part: MediaPart): MediaKind {
  if (part.type === "image") return "image";
  return isAudioType(part.mediaType) ? "audio" : "file";
}

export function isAudioType(mediaType: string | undefined): boolean {
  return mediaType !== undefined && mediaType.toLowerCase().startsWith("audio/");
}

/** The text of a content: the string itself, or its text parts joined by newlines. Media are left out. */
export function textOf(content: PartsContent): string {
  if (typeof content === "string") return content;
  let text = "";
  for (const part of content) if (part.type === "text") text = text === "" ? part.text : `${text}\n${part.text}`;
  return text;
}

/** The content as text for people and summaries: each image or file as a short note (`[image: image/png, 12.3 KB]`). */
export function describeContent(content: PartsContent): string {
  if (typeof content === "string") return content;
  return content.map((part) => (part.type === "text" ? part.text : `[${describePart(part)}]`)).join("\n");
}

/** `image: image/png, 12.3 KB`, `file: report.pdf (application/pdf), 80.0 KB`, `image: https://...`. */
export function describePart(part: MediaPart): string {
  const name = part.type === "file" && part.filename !== undefined ? `${part.filename} (${part.mediaType})` : part.mediaType;
  const inline = inlineData(part);
  const where = inline ? formatBytes(base64Bytes(inline.data)) : part.blob !== undefined ? `stored blob ${part.blob.slice(0, 19)}…` : shortUrl(part.url ?? "");
  return `${mediaKindOf(part)}: ${[name, where].filter((piece) => piece !== undefined && piece !== "").join(", ")}`;
}

function shortUrl(url: string): string {
  return url.length > 80 ? `${url.slice(0, 77)}...` : url;
}

/** True when the content has an image or a file. */
export function hasMedia(content: PartsContent): boolean {
  if (typeof content === "string") return false;
  for (const part of content) if (part.type !== "text") return true;
  return false;
}

const DATA_URL = /^data:([^;,]+)?((?:;[^;,]+)*?);base64,/i;

/** Where a part's content may be: what `inlineData` reads (a `MediaPart`, or the same fields read from stored JSON). */
export interface MediaSource {
  data?: string | undefined;
  url?: string | undefined;
  mediaType?: string | undefined;
}

/**
 * The bytes a part carries itself, as base64 with their media type: its `data`, or a base64
 * `data:` URL given as `url`. Undefined for an http(s) URL, a stored blob, or a data: URL that is not base64.
 */
export function inlineData(part: MediaSource): { data: string; mediaType: string } | undefined {
  if (part.data !== undefined) return { data: part.data, mediaType: part.mediaType ?? "application/octet-stream" };
  if (part.url === undefined || !part.url.startsWith("data:")) return undefined;
  const match = DATA_URL.exec(part.url.slice(0, 256));
  if (!match) return undefined;
  return { data: part.url.slice(match[0].length), mediaType: part.mediaType ?? match[1] ?? "application/octet-stream" };
}

/** The part as a `data:` URL (the form image_url and file_data take), or undefined when it has no bytes of its own. */
export function dataUrlOf(part: MediaPart): string | undefined {
  if (part.url?.startsWith("data:")) return part.url;
  const inline = inlineData(part);
  return inline ? `data:${inline.mediaType};base64,${inline.data}` : undefined;
}

/** Where a part sits, for errors: `messages[3] (user) part 2`. */
export function partPlace(messageIndex: number, role: string, partIndex: number): string {
  return `messages[${messageIndex}] (${role}) part ${partIndex + 1}`;
}
