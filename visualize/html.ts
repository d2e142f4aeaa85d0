/** Escaping for text and attribute values in generated HTML and SVG. */
export function esc(value: unknown): string {
  return String(value).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);
}

/** Numbers in SVG coordinates: short and never "NaN". */
export function n(value: number): string {
  if (!Number.isFinite(value)) return "0";
  return String(Math.round(value * 10) / 10);
}

/** A rough width of a text in pixels, for layout without a browser (system sans-serif, given size). */
export function textWidth(text: string, size: number): number {
  let units = 0;
  for (const ch of text) {
    if ("il.,:;'|![]()".includes(ch)) units += 0.3;
    else if ("mwMW@".includes(ch)) units += 0.85;
    else if (ch >= "A" && ch <= "Z") units += 0.66;
    else if (ch.charCodeAt(0) > 0x2e80) units += 1;
    else units += 0.55;
  }
  return units * size;
}

export function formatMs(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  const minutes = Math.floor(ms / 60_000);
  return `${minutes} min ${Math.round((ms % 60_000) / 1000)} s`;
}

export function formatCount(value: number): string {
  return value.toLocaleString("en-US");
}

/** Shorten text for a label, keeping it on one line. */
export function clip(text: string, max: number): string {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > max ? `${line.slice(0, Math.max(1, max - 1))}…` : line;
}
