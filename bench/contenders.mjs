import OpenAI from "openai";
import { ModelClient, ToolSet, createReactMachine, defaultContextBuilder, human, runAgent } from "jianmu";
import { fromAiSdk } from "jianmu/ai-sdk";
import { aiSdkChatModel, createAiSdk } from "./aisdk.mjs";
import { createChartMachine, runChart } from "./chart.mjs";
import { BENCH_PROMPT } from "./task.mjs";
import { jianmuTools, toolBodies } from "./tools.mjs";

/*
 * The contenders: the floor, jianmu, the Vercel AI SDK (aisdk.mjs), and the reference `chart`
 * (jianmu's statechart in bare XState, see chart.mjs). Each is built once per scenario (as an
 * application would build its agent once) and then `run()` many times; a run resolves with the
 * final answer text. `run(prompt, { onText })` hands every streamed piece of the answer's text to
 * `onText` the way a user of that library listens to it (the chart has no listener).
 */

const API_KEY = "bench-key";
const toolset = ToolSet.empty().withTools(jianmuTools);

/**
 * The floor sends the very prompt and tool declarations jianmu sends, so both put the same
 * bytes on the wire and only the loop around the SDK differs.
 */
const FLOOR_SYSTEM_PROMPT = defaultContextBuilder({ agent: "floor", iteration: 0, messages: [], state: {}, tools: toolset.info() })[0].content;
const FLOOR_TOOLS = toolset.schemas();

/**
 * The SDK client every contender uses. The same retry policy as jianmu's model client (2 per call):
 * it costs nothing while the server answers; on a loaded machine a pooled keep-alive connection the
 * server has just closed fails once, and without a retry that one failure would end a floor run that
 * jianmu survives. `fetch` replaces the network (inproc.mjs answers from memory).
 */
const sdkClient = ({ baseURL, fetch }) => new OpenAI({ baseURL, apiKey: API_KEY, maxRetries: 2, ...(fetch ? { fetch } : {}) });

/**
 * One model call as the floor makes it: the raw SDK request with the shared prompt and tools,
 * streamed or not, reduced to the reply's text and tool calls. The chart's `llm` actor makes the
 * very same call.
 */
export function sdkCompletion({ baseURL, model, stream, fetch }) {
  const client = sdkClient({ baseURL, fetch });
  return async function complete(messages, onText) {
    const body = { model, messages, tools: FLOOR_TOOLS, stream };
    if (!stream) {
      const completion = await client.chat.completions.create(body);
      const message = completion.choices[0].message;
      return { content: message.content ?? "", toolCalls: message.tool_calls ?? [] };
    }
    const chunks = await client.chat.completions.create({ ...body, stream_options: { include_usage: true } });
    let content = "";
    const toolCalls = [];
    for await (const chunk of chunks) {
      const delta = chunk.choices[0]?.delta;
      if (!delta) continue;
      if (delta.content) {
        onText?.(delta.content);
        content += delta.content;
      }
      for (const part of delta.tool_calls ?? []) {
        const call = (toolCalls[part.index] ??= { id: "", type: "function", function: { name: "", arguments: "" } });
        if (part.id) call.id = part.id;
        if (part.function?.name) call.function.name = part.function.name;
        if (part.function?.arguments) call.function.arguments += part.function.arguments;
      }
    }
    return { content, toolCalls };
  };
}

export const firstMessages = (prompt) => [
  { role: "system", content: FLOOR_SYSTEM_PROMPT },
  { role: "user", content: prompt },
];

/** The floor: a minimal hand-written ReAct loop on the `openai` SDK. No validation, no events, no state. */
export function createFloor({ baseURL, model, stream, fetch }) {
  const complete = sdkCompletion({ baseURL, model, stream, fetch });
  return {
    name: "floor",
    async run(prompt = BENCH_PROMPT, { onText } = {}) {
      const messages = firstMessages(prompt);
      for (let round = 0; round < 50; round++) {
        const { content, toolCalls } = await complete(messages, onText);
        if (toolCalls.length === 0) return content;
        messages.push({ role: "assistant", content: content === "" ? null : content, tool_calls: toolCalls });
        const results = await Promise.all(
          toolCalls.map(async (call) => ({
            role: "tool",
            tool_call_id: call.id,
            content: String(await toolBodies[call.function.name](JSON.parse(call.function.arguments))),
          })),
        );
        messages.push(...results);
      }
      throw new Error("floor: no final answer after 50 rounds");
    },
  };
}

/** The floor's tools as the Responses API declares them (the very bytes jianmu sends: not strict). */
const FLOOR_RESPONSES_TOOLS = FLOOR_TOOLS.map(({ function: fn }) => ({ type: "function", name: fn.name, description: fn.description, parameters: fn.parameters, strict: false }));

/**
 * The floor over the Responses API: the same minimal loop on the SDK's `responses.create`, with the
 * same prompt, tools and `store: false` as jianmu's Responses client. Its input grows by each
 * reply's function calls and their outputs; the reply's calls are read from the terminal event's
 * response (streamed) or the response itself.
 */
export function createResponsesFloor({ baseURL, model, stream, fetch }) {
  const client = sdkClient({ baseURL, fetch });
  const complete = async (input) => {
    const body = { model, input, tools: FLOOR_RESPONSES_TOOLS, store: false, stream };
    if (!stream) return (await client.responses.create(body)).output;
    let output = [];
    for await (const event of await client.responses.create(body)) if (event.type === "response.completed") output = event.response.output;
    return output;
  };
  return {
    name: "floor",
    async run(prompt = BENCH_PROMPT) {
      const input = firstMessages(prompt);
      for (let round = 0; round < 50; round++) {
        const output = await complete(input);
        const calls = output.filter((item) => item.type === "function_call");
        if (calls.length === 0) return output.flatMap((item) => (item.type === "message" ? item.content.map((part) => part.text ?? "") : [])).join("");
        for (const call of calls) input.push({ type: "function_call", call_id: call.call_id, name: call.name, arguments: call.arguments });
        const results = await Promise.all(
          calls.map(async (call) => ({ type: "function_call_output", call_id: call.call_id, output: String(await toolBodies[call.name](JSON.parse(call.arguments))) })),
        );
        input.push(...results);
      }
      throw new Error("floor: no final answer after 50 rounds");
    },
  };
}

/**
 * The reference: jianmu's chart shape in bare XState (`setup().createMachine()`, `createActor`,
 * `toPromise`) around the floor's SDK call and tool bodies. It shows how much of jianmu's cost
 * over the floor is the interpreter itself.
 */
export function createChart({ baseURL, model, stream, fetch }) {
  const machine = createChartMachine({ complete: sdkCompletion({ baseURL, model, stream, fetch }), toolBodies, toolInfo: toolset.info() });
  return {
    name: "chart",
    machine,
    async run(prompt = BENCH_PROMPT) {
      const output = await runChart(machine, firstMessages(prompt));
      if (output.status !== "succeeded") throw new Error(`chart: the run failed (${output.termination?.reason}): ${output.termination?.error ?? ""}`);
      return output.finalAnswer;
    },
  };
}

/**
 * jianmu as a user runs it: `createReactMachine` with the real model client (retries on, its
 * default policy: 2 retries per call; the server never fails) and `runAgent`, over Chat Completions
 * or (`api: "responses"`) the Responses API. `machineOptions` and `actors` (for `machine.provide`)
 * let inproc.mjs swap one layer for a bare one; `modelClient` replaces the `openai` one (ai-sdk-client.mjs
 * gives it `fromAiSdk`).
 */
export function createJianmu({ baseURL, model, stream, fetch, machineOptions = {}, actors, name = "jianmu", api = "chat", modelClient = openAiClient({ baseURL, model, stream, fetch, api }) }) {
  const built = createReactMachine({ modelClient, tools: jianmuTools, config: { maxIterations: 50 }, ...machineOptions });
  const machine = actors ? built.provide({ actors }) : built;
  return {
    name,
    machine,
    async run(prompt = BENCH_PROMPT, { onText } = {}) {
      const listen = onText ? { onEvent: (event) => event.type === "text.delta" && onText(event.delta) } : {};
      const output = await runAgent(machine, { messages: [human(prompt)] }, listen);
      if (output.status !== "succeeded") {
        throw new Error(`${name}: the run failed (${output.termination?.reason}): ${output.termination?.error?.message ?? ""}`);
      }
      return output.finalAnswer;
    },
  };
}

/** jianmu's model client on the `openai` SDK, with the floor's retry policy (2 per call). */
function openAiClient({ baseURL, model, stream, fetch, api }) {
  const endpoint = fetch ? { client: sdkClient({ baseURL, fetch }) } : { baseURL, apiKey: API_KEY };
  return ModelClient.resolve({ ...endpoint, model, stream, api, resilience: { maxRetries: 2 } });
}

/** jianmu with `fromAiSdk` over the AI SDK contender's own provider model (jianmu/ai-sdk), streamed or whole as the scenario asks. */
export const createJianmuOverAiSdk = (options) =>
  createJianmu({ ...options, name: "jianmu-ai-sdk", modelClient: fromAiSdk(aiSdkChatModel({ ...options, apiKey: API_KEY }), { stream: options.stream, resilience: { maxRetries: 2 } }) });

/** The Vercel AI SDK with the floor's prompt, key and retry policy. */
export const createAiSdkContender = (options) => createAiSdk({ ...options, apiKey: API_KEY, system: FLOOR_SYSTEM_PROMPT });

export const CONTENDERS = { floor: createFloor, chart: createChart, jianmu: createJianmu, aisdk: createAiSdkContender };
