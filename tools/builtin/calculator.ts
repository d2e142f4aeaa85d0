/**
 * `calculator`: exact arithmetic for the model, which is bad at it. Pure (no effects), so it may
 * run in parallel with anything.
 *
 * Output: `{ expression, result }`, the expression echoed so that the model can match each
 * result to its call when it asked for several in one turn. A bad expression throws an
 * `ExpressionError` whose message names the column, which the model reads and corrects.
 */
import { z } from "zod";
import { defineTool, type Tool } from "../tool.js";
import { evaluateExpression, MAX_EXPRESSION_LENGTH } from "./expression.js";
import { KNOWN_NAMES } from "./expression-functions.js";

export { evaluateExpression, ExpressionError, MAX_EXPRESSION_LENGTH, MAX_NESTING_DEPTH } from "./expression.js";

export interface CalculatorResult {
  expression: string;
  result: number;
}

export const calculatorTool: Tool = defineTool({
  name: "calculator",
  description:
    "Evaluate an arithmetic expression exactly and return its numeric result. " +
    "Operators: + - * / % (remainder) ^ or ** (power, right-associative), unary minus, parentheses. " +
    `Numbers like 42, 3.14, 1e3. Names (trig in radians, log is natural): ${KNOWN_NAMES}; round(x, digits) also works. ` +
    'Example: "25 * 4 + 10" gives 110.',
  parameters: z.object({
    expression: z.string().describe(`The expression to evaluate, at most ${MAX_EXPRESSION_LENGTH} characters, e.g. "(3 + 4) * 2^3"`),
  }),
  parallelSafe: true,
  effectTags: [],
  execute({ expression }): CalculatorResult {
    return { expression, result: evaluateExpression(expression) };
  },
});
