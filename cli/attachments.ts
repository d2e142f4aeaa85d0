import { readFileSync, statSync } from "node:fs";
import { basename, extname, resolve } from "node:path";
import type { MediaPart } from "../actors/messages.js";
import { formatBytes } from "../tools/byte-size.js";
import { isHttpUrl, UsageError } from "./args.js";

/**
 * `--image` and `--file`: the files (or image URLs) that go with the task as content parts
 * (docs/content-parts.md). Each is checked before anything starts, so a typo costs no model call.
 */

/** What each extension is. Audio is a file of type audio/* (Chat Completions takes wav and mp3). */
const IMAGE_TYPES: Record<string, string> = { ".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif", ".webp": "image/webp" };
const FILE_TYPES: Record<string, string> = { ".pdf": "application/pdf", ".wav": "audio/wav", ".mp3": "audio/mpeg" };

/** OpenAI's own limit for one image (files go up to 32 MB, but a larger upload is rarely what was meant). */
const MAX_BYTES = 20 * 1024 * 1024;

function readable(flag: string, cwd: string, file: string): { path: string; bytes: number } {
  const path = resolve(cwd, file);
  let size: number;
  try {
    const stat = statSync(path);
    if (!stat.isFile()) throw new UsageError(`${flag} ${file}: is not a file; give the path of one`);
    size = stat.size;
  } catch (error) {
    if (error instanceof UsageError) throw error;
    throw new UsageError(`${flag} ${file}: no such file (${path})`);
  }
  if (size === 0) throw new UsageError(`${flag} ${file}: the file is empty`);
  if (size > MAX_BYTES) throw new UsageError(`${flag} ${file}: ${formatBytes(size)} is more than a model takes in one part (${formatBytes(MAX_BYTES)}); make it smaller first`);
  return { path, bytes: size };
}

function typeOf(flag: string, file: string, types: Record<string, string>): string {
  const type = types[extname(file).toLowerCase()];
  if (type === undefined) throw new UsageError(`${flag} ${file}: unknown kind of file; ${flag} takes ${Object.keys(types).join(", ")}`);
  return type;
}

/** The parts for `--image` (paths or http(s) URLs) and `--file` (PDF, wav, mp3), in the order given. */
export function attachmentParts(images: readonly string[], files: readonly string[], cwd: string): MediaPart[] {
  const parts: MediaPart[] = [];
  for (const image of images) {
    if (isHttpUrl(image)) {
      parts.push({ type: "image", url: image });
      continue;
    }
    const mediaType = typeOf("--image", image, IMAGE_TYPES);
    const { path } = readable("--image", cwd, image);
    parts.push({ type: "image", data: readFileSync(path).toString("base64"), mediaType });
  }
  for (const file of files) {
    const mediaType = typeOf("--file", file, FILE_TYPES);
    const { path } = readable("--file", cwd, file);
    parts.push({ type: "file", data: readFileSync(path).toString("base64"), mediaType, filename: basename(file) });
  }
  return parts;
}
