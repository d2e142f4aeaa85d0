/**
 * The value a JSON text that is still streaming stands for so far: open strings, arrays and objects
 * are closed, and a trailing piece that cannot be completed (a key without its value, half a
 * literal, a number that may still grow) is dropped. Undefined when nothing usable has arrived yet. Used for `output.partial`,
 * so a UI can show a structured answer while the model writes it; the final value is always the
 * one parsed and validated in `CheckOutput`, never this.
 */
export function parsePartialJson(text: string): unknown {
  const start = text.search(/[{[]/);
  if (start === -1) return undefined;
  const body = text.slice(start);
  try {
    return JSON.parse(body);
  } catch {
    // still streaming: complete it below
  }
  const scan = scanStructure(body);
  // Cut back to each place where a complete member ended, newest first, until one parses.
  for (let i = scan.cuts.length - 1, tries = 0; i >= 0 && tries < 32; i--, tries++) {
    const candidate = close(body.slice(0, scan.cuts[i]!));
    if (candidate === undefined) continue;
    try {
      return JSON.parse(candidate);
    } catch {
      // try an earlier cut
    }
  }
  return undefined;
}

interface Scan {
  /** Offsets to try cutting at: the end of the text, before each comma, after each opening bracket. */
  cuts: number[];
}

/**
 * Walk `text` as JSON, calling `visit` for each character outside a string literal; says whether
 * the text ends inside a string (and just after a backslash in it).
 */
function walkOutsideStrings(text: string, visit: (c: string, i: number) => boolean | void): { inString: boolean; escaped: boolean } | undefined {
  let inString = false;
  let escaped = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (inString) {
      if (escaped) escaped = false;
      else if (c === "\\") escaped = true;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') inString = true;
    else if (visit(c, i) === false) return undefined;
  }
  return { inString, escaped };
}

function scanStructure(text: string): Scan {
  const cuts: number[] = [];
  walkOutsideStrings(text, (c, i) => {
    if (c === ",") cuts.push(i);
    else if (c === "{" || c === "[") cuts.push(i + 1);
  });
  cuts.push(text.length);
  return { cuts };
}

/** Close what is open at the end of `text`: a string, then each bracket, innermost first. */
function close(text: string): string | undefined {
  const stack: string[] = [];
  const end = walkOutsideStrings(text, (c) => {
    if (c === "{") stack.push("}");
    else if (c === "[") stack.push("]");
    // A closing bracket that does not match what is open: not a prefix of any JSON value.
    else if ((c === "}" || c === "]") && stack.pop() !== c) return false;
  });
  if (!end) return undefined;
  const { inString, escaped } = end;
  let out = text;
  if (inString) out = (escaped ? out.slice(0, -1) : out) + '"';
  // A number at the very end may still grow (2 → 21, 1e → 1e-5): it is left out until it ends.
  else out = out.replace(/-?\d[\d.eE+-]*$|-$/, "");
  out = out.replace(/[\s,:]+$/, "");
  return out + stack.reverse().join("");
}
