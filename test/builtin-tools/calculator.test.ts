import { describe, expect, it } from "vitest";
import fc from "fast-check";
import type { ToolContext } from "../../tools/tool.js";
import {
  calculatorTool,
  evaluateExpression,
  ExpressionError,
  MAX_EXPRESSION_LENGTH,
  MAX_NESTING_DEPTH,
} from "../../tools/builtin/calculator.js";

const ctx: ToolContext = { signal: new AbortController().signal, callId: "c1", state: {} };

/** The message of the ExpressionError that evaluating `text` throws (fails the test if none). */
function errorOf(text: string): string {
  try {
    evaluateExpression(text);
  } catch (error) {
    expect(error).toBeInstanceOf(ExpressionError);
    return (error as Error).message;
  }
  throw new Error(`expected "${text}" to be rejected`);
}

describe("evaluateExpression: arithmetic", () => {
  it.each([
    ["25 * 4 + 10", 110],
    ["1 + 2 * 3", 7],
    ["(1 + 2) * 3", 9],
    ["10 - 4 - 3", 3],
    ["100 / 10 / 5", 2],
    ["7 % 3", 1],
    ["-7 % 3", -1],
    ["2 + 3 * 4 ^ 2", 50],
    ["2 ^ 3 ^ 2", 512],
    ["2 ** 3 ** 2", 512],
    ["(2 ^ 3) ^ 2", 64],
    ["-2 ^ 2", -4],
    ["(-2) ^ 2", 4],
    ["2 ^ -1", 0.5],
    ["--3", 3],
    ["+-+4", -4],
    ["3 - -2", 5],
    ["2 * -3", -6],
    ["1.5e3", 1500],
    ["2.5E-2", 0.025],
    [".5 + 1.", 1.5],
    ["1e+2", 100],
    ["  \t12\n", 12],
    ["-0 * 5", 0],
  ])("%s = %s", (text, expected) => {
    expect(evaluateExpression(text)).toBe(expected);
  });

  it("returns 0, never -0", () => {
    expect(Object.is(evaluateExpression("-0 * 5"), 0)).toBe(true);
  });
});

describe("evaluateExpression: names", () => {
  it.each([
    ["pi", Math.PI],
    ["e", Math.E],
    ["2 * PI", 2 * Math.PI],
    ["sqrt(16)", 4],
    ["abs(-3.5)", 3.5],
    ["round(2.5)", 3],
    ["round(-2.5)", -3],
    ["round(2.4)", 2],
    ["round(3.14159, 2)", 3.14],
    ["round(1.005, 2)", 1.01],
    ["round(1e300, 2)", 1e300],
    ["floor(-1.5)", -2],
    ["ceil(1.2)", 2],
    ["min(3, 1, 2)", 1],
    ["max(3, 1, 2)", 3],
    ["max(-1)", -1],
    ["pow(2, 10)", 1024],
    ["log(e)", 1],
    ["log10(1000)", 3],
    ["exp(0)", 1],
    ["sin(0)", 0],
    ["cos(pi)", -1],
    ["tan(0)", 0],
    ["Sqrt(max(9, 4) * 4)", 6],
    ["sqrt(2) ^ 2", 2.0000000000000004],
  ])("%s = %s", (text, expected) => {
    expect(evaluateExpression(text)).toBe(expected);
  });
});

describe("evaluateExpression: errors name the column", () => {
  it.each([
    ["(1 + 2))", "unexpected ')' at column 8 (expected an operator or end of expression)"],
    ["1 +", "unexpected end of expression at column 4 (expected a number, a name or '(')"],
    ["1 + * 2", "unexpected '*' at column 5 (expected a number, a name or '(')"],
    ["(1 2)", "unexpected '2' at column 4 (expected ')')"],
    ["max(1 2)", "unexpected '2' at column 7 (expected ',' or ')')"],
    ["(1 + 2", "missing ')' for the '(' at column 1"],
    ["2 $ 3", "unexpected character '$' at column 3"],
    ["1 / 0", "division by zero at column 3"],
    ["5 % (2 - 2)", "division by zero at column 3"],
    ["10 ^ 400", "result of '^' at column 4 is not a finite number (overflow or undefined)"],
    ["1e308 * 10", "result of '*' at column 7 is not a finite number (overflow or undefined)"],
    ["(-8) ^ (1/3)", "result of '^' at column 6 is not a finite number (overflow or undefined)"],
    ["1e999", "number '1e999' at column 1 is too large"],
    ["sqrt(-1)", "sqrt(-1) at column 1 is not a real number"],
    ["1 + log(0)", "log(0) at column 5 is undefined: the argument must be positive"],
    ["exp(1000)", "result of exp() at column 1 is not a finite number (overflow or undefined)"],
    ["pow(2)", "pow at column 1 takes 2 arguments, got 1"],
    ["sqrt(1, 2)", "sqrt at column 1 takes 1 argument, got 2"],
    ["min()", "min at column 1 takes at least 1 argument, got 0"],
    ["round(1, 2, 3)", "round at column 1 takes 1 to 2 arguments, got 3"],
    ["round(1, 0.5)", "round(x, digits) at column 1: digits must be a whole number from 0 to 15, got 0.5"],
    ["sqrt + 1", "function 'sqrt' at column 1 needs its arguments in parentheses, e.g. sqrt(2)"],
    ["pi(2)", "'pi' at column 1 is a constant, not a function"],
    ["2pi", "malformed number '2pi' at column 1: write multiplication explicitly, e.g. 2*pi"],
    ["3 * 1e", "malformed number '1e' at column 5: an exponent needs digits, e.g. 1e3 or 2.5e-4"],
    ["1.2.3", "malformed number '1.2.3' at column 1: a number has at most one decimal point"],
    ["", "expression is empty"],
    ["   ", "expression is empty"],
  ])("%j → %s", (text, message) => {
    expect(errorOf(text)).toBe(message);
  });

  it("carries the column on the error object", () => {
    try {
      evaluateExpression("1 + (2 * )");
      expect.unreachable();
    } catch (error) {
      expect((error as ExpressionError).column).toBe(10);
    }
  });
});

describe("evaluateExpression: no way out to JavaScript", () => {
  it.each([
    ["constructor", "constructor", 1],
    ["__proto__", "__proto__", 1],
    ["toString()", "toString", 1],
    ["hasOwnProperty(1)", "hasOwnProperty", 1],
    ["process.exit(1)", "process", 1],
    ["1 + globalThis", "globalThis", 5],
    ["Math.PI", "Math", 1],
    ["x", "x", 1],
    ["require('fs')", "require", 1],
  ])("%s is an unknown name", (text, name, column) => {
    expect(errorOf(text)).toMatch(new RegExp(`^unknown name '${name}' at column ${column} \\(constants: pi, e; functions: sqrt, `));
  });

  it.each([
    ["sin('1')", "unexpected character ''' at column 5"],
    ["[1, 2]", "unexpected character '[' at column 1"],
    ["a => 1", "unknown name 'a' at column 1 (constants: pi, e; functions: sqrt, abs, round, floor, ceil, min, max, pow, log, log10, exp, sin, cos, tan)"],
    ["1; 2", "unexpected character ';' at column 2"],
    ["`1`", "unexpected character '`' at column 1"],
  ])("%s is rejected", (text, message) => {
    expect(errorOf(text)).toBe(message);
  });
});

describe("evaluateExpression: limits", () => {
  it("refuses input over the length limit before parsing it", () => {
    const long = "1+".repeat(500) + "1"; // 1001 characters
    expect(long.length).toBe(MAX_EXPRESSION_LENGTH + 1);
    expect(errorOf(long)).toBe(`expression is 1001 characters long; the limit is ${MAX_EXPRESSION_LENGTH}`);
    expect(evaluateExpression("1+".repeat(499) + "1")).toBe(500);
  });

  it("accepts nesting up to the depth limit and refuses one level more", () => {
    const nestedParens = (levels: number) => "(".repeat(levels) + "1" + ")".repeat(levels);
    expect(evaluateExpression(nestedParens(MAX_NESTING_DEPTH))).toBe(1);
    expect(errorOf(nestedParens(MAX_NESTING_DEPTH + 1))).toBe(
      `expression is nested too deeply at column ${MAX_NESTING_DEPTH + 1} (limit ${MAX_NESTING_DEPTH} levels)`,
    );
  });

  it("counts unary signs, powers and calls as nesting too", () => {
    expect(errorOf("-".repeat(MAX_NESTING_DEPTH + 1) + "1")).toMatch(/^expression is nested too deeply at column 65 /);
    expect(errorOf(Array.from({ length: MAX_NESTING_DEPTH + 2 }, () => "1").join("^"))).toMatch(/^expression is nested too deeply/);
    expect(errorOf("abs(".repeat(MAX_NESTING_DEPTH + 1) + "1" + ")".repeat(MAX_NESTING_DEPTH + 1))).toMatch(
      /^expression is nested too deeply at column 260 /,
    );
  });
});

describe("evaluateExpression: agrees with a reference evaluator", () => {
  type Tree = number | { op: "+" | "-" | "*"; left: Tree; right: Tree };
  const tree: fc.Arbitrary<Tree> = fc.letrec<{ tree: Tree }>((tie) => ({
    tree: fc.oneof(
      { depthSize: "small", withCrossShrink: true },
      fc.integer({ min: 0, max: 99 }),
      fc.record({ op: fc.constantFrom("+" as const, "-" as const, "*" as const), left: tie("tree"), right: tie("tree") }),
    ),
  })).tree;

  const value = (t: Tree): number =>
    typeof t === "number" ? t : t.op === "+" ? value(t.left) + value(t.right) : t.op === "-" ? value(t.left) - value(t.right) : value(t.left) * value(t.right);

  const precedence = { "+": 1, "-": 1, "*": 2 } as const;
  // Prints with only the parentheses precedence and left-associativity require, so that the
  // parser's precedence rules (not the parentheses) decide the grouping.
  const print = (t: Tree, parentPrecedence = 0, rightOperand = false): string => {
    if (typeof t === "number") return String(t);
    const own = precedence[t.op];
    const text = `${print(t.left, own)} ${t.op} ${print(t.right, own, true)}`;
    const needsParens = own < parentPrecedence || (rightOperand && own === parentPrecedence);
    return needsParens ? `(${text})` : text;
  };

  it("on random +, -, * expressions printed with minimal parentheses", () => {
    fc.assert(
      fc.property(tree, (t) => {
        const text = print(t);
        fc.pre(text.length <= MAX_EXPRESSION_LENGTH && Number.isSafeInteger(value(t)));
        expect(evaluateExpression(text)).toBe(value(t) === 0 ? 0 : value(t));
      }),
      { numRuns: 300 },
    );
  });
});

describe("calculatorTool", () => {
  it("is declared pure and parallel-safe", () => {
    expect(calculatorTool.name).toBe("calculator");
    expect(calculatorTool.parallelSafe).toBe(true);
    expect(calculatorTool.effectTags).toEqual([]);
    expect(calculatorTool.inputSchema).toMatchObject({
      type: "object",
      properties: { expression: { type: "string" } },
      required: ["expression"],
    });
  });

  it("answers the demo question with the expression echoed", async () => {
    const check = calculatorTool.validate({ expression: "25 * 4 + 10" });
    if (!check.ok) throw new Error(check.error);
    expect(await calculatorTool.execute(check.value, ctx)).toEqual({ expression: "25 * 4 + 10", result: 110 });
  });

  it("throws the parser's message for a bad expression", async () => {
    const check = calculatorTool.validate({ expression: "2 * (3 + 4" });
    if (!check.ok) throw new Error(check.error);
    expect(() => calculatorTool.execute(check.value, ctx)).toThrow("missing ')' for the '(' at column 5");
  });

  it("rejects arguments that are not a string expression", () => {
    expect(calculatorTool.validate({ expression: 42 })).toMatchObject({ ok: false, error: expect.stringContaining("expression") });
    expect(calculatorTool.validate({})).toMatchObject({ ok: false });
  });
});
