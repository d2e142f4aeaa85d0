/**
 * A recursive-descent parser that evaluates as it parses (no AST: nothing needs one).
 * Never `eval` or `Function`: the only names are the constants and functions in
 * expression-functions.ts.
 *
 * Grammar, loosest binding first:
 *   expression     := additive
 *   additive       := multiplicative (("+" | "-") multiplicative)*
 *   multiplicative := unary (("*" | "/" | "%") unary)*
 *   unary          := ("+" | "-") unary | power
 *   power          := primary (("^" | "**") unary)?        right-associative: 2^3^2 = 2^9
 *   primary        := number | constant | function "(" arguments? ")" | "(" expression ")"
 *
 * Unary minus binds looser than power, as in mathematics: -2^2 = -4, while 2^-1 = 0.5.
 */
import { ExpressionError, Lexer, type Token } from "./expression-lexer.js";
import { CONSTANTS, FUNCTIONS, KNOWN_NAMES } from "./expression-functions.js";

export { ExpressionError } from "./expression-lexer.js";

/** Longer input is refused before parsing: a calculator expression has no reason to be this long. */
export const MAX_EXPRESSION_LENGTH = 1000;
/** Parentheses, function calls, unary signs and powers each add a level; the limit keeps recursion shallow. */
export const MAX_NESTING_DEPTH = 64;

function describe(token: Token): string {
  return token.kind === "end" ? `end of expression at column ${token.column}` : `'${token.text}' at column ${token.column}`;
}

function unexpected(token: Token, expected?: string): ExpressionError {
  const suffix = expected === undefined ? "" : ` (expected ${expected})`;
  return new ExpressionError(`unexpected ${describe(token)}${suffix}`, token.column);
}

/** Overflow (1e308*10), 0^-1 and (-8)^(1/3) all end up here rather than as Infinity or NaN. */
function finite(value: number, what: string, column: number): number {
  if (!Number.isFinite(value)) {
    throw new ExpressionError(`result of ${what} at column ${column} is not a finite number (overflow or undefined)`, column);
  }
  return value;
}

const OPERAND = "a number, a name or '('";

class Parser {
  private depth = 0;

  constructor(private readonly lexer: Lexer) {}

  parseAll(): number {
    const value = this.additive();
    const rest = this.lexer.peek();
    if (rest.kind !== "end") throw unexpected(rest, "an operator or end of expression");
    return value;
  }

  private additive(): number {
    let left = this.multiplicative();
    for (;;) {
      const token = this.lexer.peek();
      if (token.kind !== "operator" || (token.operator !== "+" && token.operator !== "-")) return left;
      this.lexer.next();
      const right = this.multiplicative();
      left = finite(token.operator === "+" ? left + right : left - right, `'${token.text}'`, token.column);
    }
  }

  private multiplicative(): number {
    let left = this.unary();
    for (;;) {
      const token = this.lexer.peek();
      if (token.kind !== "operator" || (token.operator !== "*" && token.operator !== "/" && token.operator !== "%")) {
        return left;
      }
      this.lexer.next();
      const right = this.unary();
      if (token.operator !== "*" && right === 0) {
        throw new ExpressionError(`division by zero at column ${token.column}`, token.column);
      }
      const value = token.operator === "*" ? left * right : token.operator === "/" ? left / right : left % right;
      left = finite(value, `'${token.text}'`, token.column);
    }
  }

  private unary(): number {
    const token = this.lexer.peek();
    if (token.kind === "operator" && (token.operator === "+" || token.operator === "-")) {
      this.lexer.next();
      const operand = this.nested(token, () => this.unary());
      return token.operator === "-" ? -operand : operand;
    }
    return this.power();
  }

  private power(): number {
    const base = this.primary();
    const token = this.lexer.peek();
    if (token.kind !== "operator" || token.operator !== "^") return base;
    this.lexer.next();
    const exponent = this.nested(token, () => this.unary());
    return finite(base ** exponent, `'${token.text}'`, token.column);
  }

  private primary(): number {
    const token = this.lexer.next();
    switch (token.kind) {
      case "number":
        return token.value;
      case "(": {
        const value = this.nested(token, () => this.additive());
        this.closing(token, "')'");
        return value;
      }
      case "name":
        return this.name(token);
      default:
        throw unexpected(token, OPERAND);
    }
  }

  private name(token: Token & { kind: "name" }): number {
    // Case-insensitive so that PI and Sqrt work; the tables hold lower-case keys only.
    const key = token.text.toLowerCase();
    const constant = CONSTANTS.get(key);
    if (constant !== undefined) {
      if (this.lexer.peek().kind === "(") {
        throw new ExpressionError(`'${token.text}' at column ${token.column} is a constant, not a function`, token.column);
      }
      return constant;
    }
    const fn = FUNCTIONS.get(key);
    // Judged before the next token is scanned, so `process.exit(1)` fails on `process`, not on `.`.
    if (fn === undefined) {
      throw new ExpressionError(`unknown name '${token.text}' at column ${token.column} (${KNOWN_NAMES})`, token.column);
    }
    const isCall = this.lexer.peek().kind === "(";
    if (!isCall) {
      throw new ExpressionError(
        `function '${token.text}' at column ${token.column} needs its arguments in parentheses, e.g. ${key}(2)`,
        token.column,
      );
    }
    const open = this.lexer.next();
    const args = this.nested(open, () => this.arguments());
    this.closing(open, "',' or ')'");
    if (args.length < fn.minArgs || args.length > fn.maxArgs) {
      const wanted =
        fn.maxArgs === Number.POSITIVE_INFINITY
          ? `at least ${fn.minArgs} argument${fn.minArgs === 1 ? "" : "s"}`
          : fn.minArgs === fn.maxArgs
            ? `${fn.minArgs} argument${fn.minArgs === 1 ? "" : "s"}`
            : `${fn.minArgs} to ${fn.maxArgs} arguments`;
      throw new ExpressionError(`${key} at column ${token.column} takes ${wanted}, got ${args.length}`, token.column);
    }
    return finite(fn.apply(args, token.column), `${key}()`, token.column);
  }

  private arguments(): number[] {
    if (this.lexer.peek().kind === ")") return [];
    const args = [this.additive()];
    while (this.lexer.peek().kind === ",") {
      this.lexer.next();
      args.push(this.additive());
    }
    return args;
  }

  private closing(open: Token, expected: string): void {
    const token = this.lexer.next();
    if (token.kind === ")") return;
    if (token.kind === "end") {
      throw new ExpressionError(`missing ')' for the '(' at column ${open.column}`, token.column);
    }
    throw unexpected(token, expected);
  }

  private nested<T>(at: Token, parse: () => T): T {
    if (++this.depth > MAX_NESTING_DEPTH) {
      throw new ExpressionError(`expression is nested too deeply at column ${at.column} (limit ${MAX_NESTING_DEPTH} levels)`, at.column);
    }
    try {
      return parse();
    } finally {
      this.depth--;
    }
  }
}

/**
 * Evaluate an arithmetic expression such as `25 * 4 + 10` or `sqrt(2) * pi`.
 * Throws `ExpressionError` (with `column`) for anything it cannot evaluate to a finite number.
 */
export function evaluateExpression(text: string): number {
  if (text.length > MAX_EXPRESSION_LENGTH) {
    throw new ExpressionError(`expression is ${text.length} characters long; the limit is ${MAX_EXPRESSION_LENGTH}`);
  }
  if (text.trim() === "") throw new ExpressionError("expression is empty");
  const value = new Parser(new Lexer(text)).parseAll();
  // -0 is a JavaScript artefact (e.g. -0 * 5); a person reads it as 0.
  return value === 0 ? 0 : value;
}
