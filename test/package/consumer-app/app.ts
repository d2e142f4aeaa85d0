/**
 * An app that embeds jianmu, typechecked and run by test/package/consumer.test.ts in a fresh
 * project with its own xstate, zod and openai. Strict, skipLibCheck false, and no @types/node:
 * jianmu's published types must stand on the app's packages alone.
 */
import { createLLMActor, createReactMachine, defineTool, human, ModelClient, type AgentOutput } from "jianmu";
import OpenAI from "openai";
import { assign, createActor, setup, toPromise } from "xstate";
import { z } from "zod";

// The one Node global this file needs, declared here rather than pulled in with @types/node.
declare const process: { env: Record<string, string | undefined> };

const baseURL = process.env["OPENAI_BASE_URL"];
if (baseURL === undefined) throw new Error("OPENAI_BASE_URL is not set");

// The app's own client, made by the app's own copy of openai.
const client = new OpenAI({ baseURL, apiKey: "app-key", maxRetries: 0 });

// The app's zod schema goes straight into defineTool.
const WeatherArgs = z.object({ city: z.string().describe("City name, e.g. Paris") });
const weather = defineTool({
  name: "get_weather",
  description: "The weather in a city",
  parameters: WeatherArgs,
  execute: ({ city }) => `sunny in ${city}`,
});

const agent = createReactMachine({ modelClient: ModelClient.resolve({ client, model: "app-model" }), tools: [weather] });

// The app swaps the agent's llm actor: same endpoint, but it counts the model calls.
let modelCalls = 0;
const endpoint = ModelClient.resolve({ client, model: "app-model" });
const countingClient: ModelClient = {
  description: endpoint.description,
  complete: (request, options) => {
    modelCalls += 1;
    return endpoint.complete(request, options);
  },
};
const counted = agent.provide({ actors: { llm: createLLMActor({ modelClient: countingClient }) } });

interface TripContext {
  answer: string | null;
  status: AgentOutput["status"] | "pending";
}

// The app's own machine invokes the agent as a child actor.
const app = setup({
  types: { context: {} as TripContext, output: {} as TripContext },
  actors: { agent: counted },
}).createMachine({
  id: "TripApp",
  initial: "asking",
  context: { answer: null, status: "pending" },
  states: {
    asking: {
      invoke: {
        src: "agent",
        input: { messages: [human("What is the weather in Paris?")] },
        onDone: { target: "done", actions: assign(({ event }) => ({ answer: event.output.finalAnswer, status: event.output.status })) },
      },
    },
    done: { type: "final" },
  },
  output: ({ context }) => context,
});

const result = await toPromise(createActor(app).start());
console.log(JSON.stringify({ ...result, modelCalls }));
