/**
 * OpenTelemetry traces of a run. `runAgent(machine, input, { tracer })` produces spans that follow
 * the GenAI semantic conventions: `invoke_agent` for the run, `chat {model}` for each model call
 * (model, token usage, finish reason), `execute_tool {name}` for each tool call and
 * `awaiting_approval` while a person decides. Here the spans go to an in-memory exporter and are
 * printed as a tree; in an application, register an OTLP exporter instead (see docs/visualize.md).
 *
 * Offline by default (scripted turns over a loopback OpenAI-compatible server); with
 * OPENAI_API_KEY or OPENAI_BASE_URL set, the same code asks the real model.
 * Run: node examples/run.mjs tracing   (test: npx vitest run examples/tracing.test.ts)
 */
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { z } from "zod";
import { createReactMachine, defineTool, human, requireApproval, runAgent, type AgentOutput } from "../index.js";
import { failIfFailed } from "./support/outcome.js";
import { connectModel, type EndpointOptions } from "./support/endpoint.js";
import { scriptedTurns, textTurn, toolCallTurn } from "./support/turns.js";

export const TASK = "Convert 120 EUR to USD and send the result to the finance team.";

const OFFLINE_TURNS = scriptedTurns([
  toolCallTurn([{ id: "call_convert_1", name: "convert_currency", args: { amount: 120, from: "EUR", to: "USD" } }], { promptTokens: 210, completionTokens: 22 }),
  toolCallTurn([{ id: "call_send_1", name: "send_message", args: { to: "finance", text: "120 EUR is 130.80 USD." } }], { promptTokens: 260, completionTokens: 28 }),
  textTurn("120 EUR is 130.80 USD; I sent that to the finance team.", { promptTokens: 300, completionTokens: 17 }),
]);

const convertCurrency = defineTool({
  name: "convert_currency",
  description: "Convert an amount between currencies at today's rate.",
  parameters: z.object({ amount: z.number(), from: z.string().length(3), to: z.string().length(3) }),
  execute: ({ amount, from, to }) => {
    const rates: Record<string, number> = { EURUSD: 1.09, USDEUR: 0.917 };
    const rate = rates[`${from}${to}`];
    if (rate === undefined) throw new Error(`no rate for ${from} to ${to}`);
    return `${amount} ${from} is ${(amount * rate).toFixed(2)} ${to}`;
  },
});

const sendMessage = defineTool({
  name: "send_message",
  description: "Send a message to a team.",
  parameters: z.object({ to: z.string(), text: z.string() }),
  effectTags: ["external"],
  execute: ({ to }) => `sent to ${to}`,
});

/** One line per span, indented under its parent: `name  key=value ...`. */
export function spanTree(spans: readonly ReadableSpan[]): string[] {
  const ids = new Set(spans.map((span) => span.spanContext().spanId));
  const children = new Map<string | undefined, ReadableSpan[]>();
  for (const span of spans) {
    const parent = span.parentSpanContext?.spanId;
    const key = parent !== undefined && ids.has(parent) ? parent : undefined;
    children.set(key, [...(children.get(key) ?? []), span]);
  }
  const startOf = (span: ReadableSpan) => span.startTime[0] * 1e9 + span.startTime[1];
  const shown = ["gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "gen_ai.response.finish_reasons", "gen_ai.tool.call.id", "jianmu.tool.status", "jianmu.approval.decision", "jianmu.run.status"];
  const lines: string[] = [];
  const walk = (parent: string | undefined, depth: number) => {
    for (const span of [...(children.get(parent) ?? [])].sort((a, b) => startOf(a) - startOf(b))) {
      const details = shown.filter((key) => span.attributes[key] !== undefined).map((key) => `${key.split(".").pop()}=${String(span.attributes[key])}`);
      lines.push(`${"  ".repeat(depth)}${span.name}${details.length > 0 ? `  ${details.join(" ")}` : ""}`);
      walk(span.spanContext().spanId, depth + 1);
    }
  };
  walk(undefined, 0);
  return lines;
}

export interface TracingResult {
  output: AgentOutput;
  spans: ReadableSpan[];
  tree: string[];
}

export async function main(options: EndpointOptions & { log?: (line: string) => void } = {}): Promise<TracingResult> {
  const log = options.log ?? console.log;
  const endpoint = await connectModel(OFFLINE_TURNS, options);
  log(endpoint.banner);
  // The SDK side: in an application, an OTLP exporter to your collector (Jaeger, Tempo, Honeycomb...).
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  try {
    const machine = createReactMachine({
      modelClient: endpoint.modelClient,
      tools: [convertCurrency, sendMessage],
      constraints: [requireApproval({ effectTags: ["external"] })],
      configFile: false,
    });
    const output = await runAgent(machine, { messages: [human(TASK)] }, {
      // The one line that turns tracing on; `traceContent: true` would also record arguments and text.
      tracer: provider.getTracer("tracing-example"),
      onApproval: (request) => {
        log(`approving ${request.name} ${request.arguments}`);
        return { approve: true };
      },
    });
    const spans = exporter.getFinishedSpans().slice();
    const tree = spanTree(spans);
    for (const line of tree) log(line);
    failIfFailed(output, log);
    log(output.finalAnswer ?? "");
    return { output, spans, tree };
  } finally {
    await provider.shutdown();
    await endpoint.close();
  }
}
