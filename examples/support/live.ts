/**
 * The examples' second mode in tests: live, through the same path a user's real endpoint takes.
 * A loopback OpenAI-compatible server plays the example's turns, and the example finds it the way
 * it finds a real one: OPENAI_BASE_URL in `process.env` itself (not a copy), no offline shortcut.
 */
import { startOpenAIServer, type ReceivedRequest } from "../../testing.js";
import type { EndpointOptions } from "./endpoint.js";
import type { OfflineReplay } from "./endpoint.js";

export const EXAMPLE_MODES = ["offline", "live"] as const;
export type ExampleMode = (typeof EXAMPLE_MODES)[number];

const VARIABLES = ["OPENAI_API_KEY", "OPENAI_BASE_URL", "JIANMU_MODEL"] as const;

export interface ModeRun<T> {
  result: T;
  /** What the loopback endpoint received in live mode; undefined offline (the example keeps its own). */
  requests: ReceivedRequest[] | undefined;
}

/** Run an example's `main` in one mode; live sets the environment variables for the run and restores them. */
export async function runInMode<T>(mode: ExampleMode, replay: OfflineReplay, main: (options: EndpointOptions) => Promise<T>): Promise<ModeRun<T>> {
  if (mode === "offline") return { result: await main({ mode: "offline" }), requests: undefined };
  const server = await startOpenAIServer({ respond: replay.respond });
  const saved = VARIABLES.map((name) => [name, process.env[name]] as const);
  delete process.env["OPENAI_API_KEY"];
  delete process.env["JIANMU_MODEL"];
  process.env["OPENAI_BASE_URL"] = server.baseURL;
  try {
    return { result: await main({ env: process.env }), requests: [...server.requests] };
  } finally {
    for (const [name, value] of saved) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    await server.close();
  }
}
