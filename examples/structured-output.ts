/**
 * A typed final answer: `createReactMachine({ output: schema })`. The model gives its result with the
 * `final_result` tool; `CheckOutput` validates it, sends a mismatch back naming the field (costing an
 * iteration), and the run's `output.output` is typed `z.infer<typeof Forecast>`.
 *
 * Offline: the scripted model first gets the temperature's type wrong, then fixes it.
 * Run: node examples/run.mjs structured-output   (or: npx vitest run examples/structured-output.test.ts)
 */
import { z } from "zod";
import { createReactMachine, defineTool, human, runAgent, type AgentOutput } from "../index.js";
import { connectModel, type EndpointOptions } from "./support/endpoint.js";
import { failIfFailed } from "./support/outcome.js";
import { scriptedTurns, textTurn, toolCallTurn } from "./support/turns.js";

export const Forecast = z.object({
  city: z.string(),
  temperatureC: z.number(),
  conditions: z.enum(["sunny", "cloudy", "rain", "snow"]),
  advice: z.string().describe("one short sentence"),
});
export type Forecast = z.infer<typeof Forecast>;

export const TASK = "What's the weather in Bergen, and what should I wear?";

const weather = defineTool({
  name: "get_weather",
  description: "Current weather for a city",
  parameters: z.object({ city: z.string() }),
  execute: ({ city }) => ({ city, temperatureC: 7, conditions: "rain" }),
});

const OFFLINE_TURNS = scriptedTurns([
  toolCallTurn([{ id: "call_w", name: "get_weather", args: { city: "Bergen" } }]),
  toolCallTurn([{ id: "call_r1", name: "final_result", args: { city: "Bergen", temperatureC: "7°C", conditions: "rain", advice: "Take an umbrella." } }]),
  toolCallTurn([{ id: "call_r2", name: "final_result", args: { city: "Bergen", temperatureC: 7, conditions: "rain", advice: "Take an umbrella." } }]),
  textTurn("(not reached)"),
]);

export async function main(options: EndpointOptions & { log?: (line: string) => void } = {}): Promise<AgentOutput<Forecast>> {
  const log = options.log ?? console.log;
  const { modelClient, banner, close } = await connectModel(OFFLINE_TURNS, options);
  log(banner);
  try {
    const machine = createReactMachine({
      modelClient,
      tools: [weather],
      output: Forecast,
      // "tool" works with every tool-calling model; "native" sends response_format json_schema (strict).
      config: { outputStrategy: "tool", outputRetries: 2 },
      configFile: false,
    });
    const output = await runAgent(machine, { messages: [human(TASK)] }, {
      onEvent: (event) => {
        if (event.type === "output.invalid") log(`rejected final output (${event.failures}): ${event.error}`);
      },
    });
    failIfFailed(output, log);
    if (output.output) log(`${output.output.city}: ${output.output.temperatureC}°C, ${output.output.conditions}. ${output.output.advice}`);
    return output;
  } finally {
    await close();
  }
}
