import { join } from "node:path";
import { z } from "zod";
import { defineTool, type Tool } from "../tools/tool.js";
import { packageRoot } from "./package-root.js";

/**
 * The offline demos: real model turns recorded from OpenAI (pydantic-ai's test cassettes, see
 * test/fixtures/openai/SOURCES.md), replayed over loopback HTTP. Each demo brings the tools the
 * recorded model called, answering what the recording's tools answered, so the replayed turns
 * and our tool results tell one consistent story.
 */
export interface RecordedDemo {
  task: string;
  /** The recording, relative to the package folder. */
  recording: string;
  model: string;
  tools: () => Tool[];
}

const noArgs = z.object({});

const DEMOS: readonly RecordedDemo[] = [
  {
    task: "Tell me: the capital of the country; the weather there; the product name",
    recording: "test/fixtures/openai/pydantic-ai/test_temporal/test_complex_agent_run.yaml",
    model: "gpt-4o",
    tools: () => [
      defineTool({ name: "get_country", description: "The user's country", parameters: noArgs, parallelSafe: true, execute: () => "Mexico" }),
      defineTool({ name: "get_product_name", description: "The name of the product", parameters: noArgs, parallelSafe: true, execute: () => "Pydantic AI" }),
      defineTool({
        name: "get_weather",
        description: "Current weather in a city",
        parameters: z.object({ city: z.string() }),
        parallelSafe: true,
        execute: () => "sunny",
      }),
      defineTool({
        name: "final_result",
        description: "The final response which ends this conversation",
        parameters: z.object({ answers: z.array(z.object({ label: z.string(), answer: z.string() })) }),
        returnDirect: true,
        execute: ({ answers }) => answers.map((a) => `${a.label}: ${a.answer}`).join("\n"),
      }),
    ],
  },
  {
    task: "What is the capital of the UK? Use the tool, then answer.",
    recording: "test/fixtures/openai/pydantic-ai/test_openai/test_run_stream_sync_streams_real_model.yaml",
    model: "gpt-4o-mini",
    tools: () => [
      defineTool({
        name: "get_capital",
        description: "The capital city of a country",
        parameters: z.object({ country: z.string() }),
        execute: ({ country }) => (/^(uk|united kingdom)$/i.test(country) ? "London" : `unknown country: ${country}`),
      }),
    ],
  },
];

export const DEFAULT_DEMO = DEMOS[0]!;

export function recordedDemoFor(task: string): RecordedDemo | undefined {
  const wanted = task.trim().toLowerCase();
  return DEMOS.find((demo) => demo.task.toLowerCase() === wanted);
}

export function demoTasks(): string[] {
  return DEMOS.map((demo) => demo.task);
}

export function recordingPath(demo: RecordedDemo): string {
  return join(packageRoot(), demo.recording);
}
