/** How many bytes a base64 text decodes to, without decoding it (whitespace, as in wrapped base64, is not counted). */
export function base64Bytes(data: string): number {
  const text = /\s/.test(data) ? data.replace(/\s/g, "") : data;
  const padding = text.endsWith("==") ? 2 : text.endsWith("=") ? 1 : 0;
  return Math.max(0, Math.floor((text.length * 3) / 4) - padding);
}

/** A size as people read it: `512 bytes`, `12.3 KB`, `4.0 MB`. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} bytes`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}
