import { JianmuError } from "../jianmu-error.js";
/**
 * Tokenizer for the calculator's expression language. It scans lazily (one token per `next()`),
 * so the parser reports the first problem from the left: in `process.exit(1)` the model hears
 * about the unknown name `process`, not about the `.` that follows it.
 */

/** A mistake in an expression, with the 1-based column where it was found. */
export class ExpressionError extends JianmuError {
  static override readonly errorCode = "EXPRESSION_ERROR";
  override name = "ExpressionError";
  constructor(
    message: string,
    readonly column?: number,
  ) {
    super(message);
  }
}

export type Operator = "+" | "-" | "*" | "/" | "%" | "^";

export type Token =
  | { kind: "number"; text: string; value: number; column: number }
  | { kind: "name"; text: string; column: number }
  | { kind: "operator"; text: string; operator: Operator; column: number }
  | { kind: "(" | ")" | ","; text: string; column: number }
  | { kind: "end"; text: ""; column: number };

// Sticky regexes: each one matches only at `lastIndex`, so scanning never skips input.
const NUMBER = /(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?/y;
const NAME = /[A-Za-z_][A-Za-z0-9_]*/y;
const WHITESPACE = /\s+/y;
// Characters glued to a number that make it malformed (`2pi`, `1e`, `1.2.3`).
const NUMBER_TAIL = /[A-Za-z0-9_.]+/y;

const SINGLE_CHAR_OPERATORS: ReadonlyMap<string, Operator> = new Map([
  ["+", "+"],
  ["-", "-"],
  ["*", "*"],
  ["/", "/"],
  ["%", "%"],
  ["^", "^"],
]);

function matchAt(pattern: RegExp, source: string, index: number): string | undefined {
  pattern.lastIndex = index;
  return pattern.exec(source)?.[0];
}

export class Lexer {
  private index = 0;
  private lookahead: Token | undefined;

  constructor(private readonly source: string) {}

  peek(): Token {
    this.lookahead ??= this.scan();
    return this.lookahead;
  }

  next(): Token {
    const token = this.peek();
    this.lookahead = undefined;
    return token;
  }

  private scan(): Token {
    const { source } = this;
    this.index += matchAt(WHITESPACE, source, this.index)?.length ?? 0;
    const start = this.index;
    const column = start + 1;
    if (start >= source.length) return { kind: "end", text: "", column };

    const number = matchAt(NUMBER, source, start);
    if (number !== undefined) return this.scanNumber(number, column);

    const name = matchAt(NAME, source, start);
    if (name !== undefined) {
      this.index += name.length;
      return { kind: "name", text: name, column };
    }

    // `**` is accepted as power because models often write it (Python, JavaScript).
    if (source.startsWith("**", start)) {
      this.index += 2;
      return { kind: "operator", text: "**", operator: "^", column };
    }
    const char = source[start] ?? "";
    const operator = SINGLE_CHAR_OPERATORS.get(char);
    if (operator !== undefined) {
      this.index += 1;
      return { kind: "operator", text: char, operator, column };
    }
    if (char === "(" || char === ")" || char === ",") {
      this.index += 1;
      return { kind: char, text: char, column };
    }
    // Show the whole character even when it is outside the BMP (an emoji is two UTF-16 units).
    const shown = String.fromCodePoint(source.codePointAt(start) ?? 0);
    throw new ExpressionError(`unexpected character '${shown}' at column ${column}`, column);
  }

  private scanNumber(text: string, column: number): Token {
    const tail = matchAt(NUMBER_TAIL, this.source, this.index + text.length);
    if (tail !== undefined) {
      const whole = text + tail;
      const hint = /^[eE]/.test(tail)
        ? "an exponent needs digits, e.g. 1e3 or 2.5e-4"
        : tail.startsWith(".")
          ? "a number has at most one decimal point"
          : "write multiplication explicitly, e.g. 2*pi";
      throw new ExpressionError(`malformed number '${whole}' at column ${column}: ${hint}`, column);
    }
    const value = Number(text);
    if (!Number.isFinite(value)) {
      throw new ExpressionError(`number '${text}' at column ${column} is too large`, column);
    }
    this.index += text.length;
    return { kind: "number", text, value, column };
  }
}
