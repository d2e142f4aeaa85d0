/**
 * The names an expression may use. Lookups go through `Map`s, never through plain objects, so
 * `constructor`, `__proto__`, `toString` and friends are simply unknown names.
 */
import { ExpressionError } from "./expression-lexer.js";

export const CONSTANTS: ReadonlyMap<string, number> = new Map([
  ["pi", Math.PI],
  ["e", Math.E],
]);

export interface MathFunction {
  readonly minArgs: number;
  /** `Infinity` for variadic functions (min, max). */
  readonly maxArgs: number;
  /** Throws `ExpressionError` for arguments outside the function's domain. */
  apply(args: readonly number[], column: number): number;
}

function unary(apply: (x: number) => number): MathFunction {
  return { minArgs: 1, maxArgs: 1, apply: (args) => apply(args[0] ?? Number.NaN) };
}

function positiveOnly(name: string, apply: (x: number) => number): MathFunction {
  return {
    minArgs: 1,
    maxArgs: 1,
    apply(args, column) {
      const x = args[0] ?? Number.NaN;
      if (x <= 0) {
        throw new ExpressionError(`${name}(${x}) at column ${column} is undefined: the argument must be positive`, column);
      }
      return apply(x);
    },
  };
}

/**
 * Round half away from zero (2.5 → 3, -2.5 → -3), as people expect from a calculator;
 * `Math.round` alone rounds -2.5 to -2. With `digits`, the scaled value is first cut to 15
 * significant digits so that binary noise (1.005 * 100 = 100.49999999999999) does not decide.
 */
function roundHalfAwayFromZero(x: number, digits: number): number {
  const scale = 10 ** digits;
  // Past 2^53 every double is a whole number: x has no digits left to round at this scale.
  if (Math.abs(x) * scale >= Number.MAX_SAFE_INTEGER) return x;
  const scaled = Number.parseFloat((Math.abs(x) * scale).toPrecision(15));
  return (Math.sign(x) * Math.round(scaled)) / scale;
}

const MAX_ROUND_DIGITS = 15;

const round: MathFunction = {
  minArgs: 1,
  maxArgs: 2,
  apply(args, column) {
    const x = args[0] ?? Number.NaN;
    const digits = args[1] ?? 0;
    if (!Number.isInteger(digits) || digits < 0 || digits > MAX_ROUND_DIGITS) {
      throw new ExpressionError(
        `round(x, digits) at column ${column}: digits must be a whole number from 0 to ${MAX_ROUND_DIGITS}, got ${digits}`,
        column,
      );
    }
    return roundHalfAwayFromZero(x, digits);
  },
};

export const FUNCTIONS: ReadonlyMap<string, MathFunction> = new Map<string, MathFunction>([
  [
    "sqrt",
    {
      minArgs: 1,
      maxArgs: 1,
      apply(args, column) {
        const x = args[0] ?? Number.NaN;
        if (x < 0) throw new ExpressionError(`sqrt(${x}) at column ${column} is not a real number`, column);
        return Math.sqrt(x);
      },
    },
  ],
  ["abs", unary(Math.abs)],
  ["round", round],
  ["floor", unary(Math.floor)],
  ["ceil", unary(Math.ceil)],
  ["min", { minArgs: 1, maxArgs: Number.POSITIVE_INFINITY, apply: (args) => Math.min(...args) }],
  ["max", { minArgs: 1, maxArgs: Number.POSITIVE_INFINITY, apply: (args) => Math.max(...args) }],
  ["pow", { minArgs: 2, maxArgs: 2, apply: (args) => (args[0] ?? Number.NaN) ** (args[1] ?? Number.NaN) }],
  ["log", positiveOnly("log", Math.log)],
  ["log10", positiveOnly("log10", Math.log10)],
  ["exp", unary(Math.exp)],
  ["sin", unary(Math.sin)],
  ["cos", unary(Math.cos)],
  ["tan", unary(Math.tan)],
]);

/** For error messages and the tool description: everything a model may write. */
export const KNOWN_NAMES = `constants: ${[...CONSTANTS.keys()].join(", ")}; functions: ${[...FUNCTIONS.keys()].join(", ")}`;
