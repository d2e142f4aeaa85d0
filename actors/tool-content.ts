import { z } from "zod";
import { describeContent } from "./content-parts.js";
import { ContentPartSchema, type ContentPart } from "./messages.js";
import { truncateOutput } from "./tool-outcome.js";

/*
 * A tool that returns images or files: `return toolContent([{ type: "text", text: "..." }, { type:
 * "image", data, mediaType: "image/png" }])`. Any other value is rendered as text, as before; the
 * marker keeps a tool whose JSON result merely looks like parts from being read as parts.
 */

/** `Symbol.for`, so a value made by another copy of jianmu in the app is still recognized. */
const TOOL_CONTENT = Symbol.for("jianmu.toolContent");

/** What `toolContent` returns: the parts, marked as a tool's content. */
export interface ToolContent {
  readonly [TOOL_CONTENT]: true;
  readonly parts: readonly ContentPart[];
}

/** A tool result made of parts: text, images (`image`), documents and audio (`file`). Checked when the tool returns it. */
export function toolContent(parts: readonly ContentPart[]): ToolContent {
  return { [TOOL_CONTENT]: true, parts };
}

export function isToolContent(value: unknown): value is ToolContent {
  return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[TOOL_CONTENT] === true;
}

const partsSchema = () => z.array(ContentPartSchema).min(1, { error: "needs at least one part" });
let schema: ReturnType<typeof partsSchema> | undefined;

/**
 * The parts as the tool message will carry them, or why they cannot be used. Text parts are cut to
 * `maxChars` in all (an image is not text and is not cut); `text` is the observation's text form.
 */
export function checkedToolContent(content: ToolContent, maxChars: number): { parts: ContentPart[]; text: string } | { problem: string } {
  const parsed = (schema ??= partsSchema()).safeParse(content.parts);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    return { problem: `its toolContent parts are not valid: parts${issue.path.map((key) => (typeof key === "number" ? `[${key}]` : `.${String(key)}`)).join("")}: ${issue.message}` };
  }
  let left = maxChars;
  const parts = parsed.data.map((part): ContentPart => {
    if (part.type !== "text") return part;
    const text = truncateOutput(part.text, Math.max(0, left));
    left -= part.text.length;
    return text === part.text ? part : { type: "text", text };
  });
  return { parts, text: describeContent(parts) };
}
