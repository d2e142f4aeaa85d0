/**
 * The agent as one step of your own XState machine. A trip-planning workflow invokes the agent
 * (`setup({ actors: { agent } })` + `invoke: { src: "agent", input, onDone }`), watches it with
 * `onSnapshot` to learn which tool calls wait for approval, forwards the user's decisions to it
 * with `sendTo`, and reads its output when it is done. The UI talks to the workflow only.
 *
 * Offline by default: real gpt-4o-mini turns, recorded by pydantic-ai's test suite
 * (test/fixtures/openai/SOURCES.md), replayed by a loopback OpenAI-compatible server. With
 * OPENAI_API_KEY or OPENAI_BASE_URL set, the same code asks the real model.
 * Run: node examples/run.mjs child-actor   (test: npx vitest run examples/child-actor.test.ts)
 */
import { assign, createActor, sendTo, setup, toPromise } from "xstate";
import { z } from "zod";
import { createReactMachine, defineTool, human, pendingApprovals, requireApproval, type PendingApproval } from "../index.js";
import { connectModel, type EndpointOptions } from "./support/endpoint.js";
import { ExampleRunFailed, failureLine } from "./support/outcome.js";
import { repoPath } from "./support/paths.js";
import { recordedTurns } from "./support/turns.js";

/** The question the recording was made with, word for word. */
export const TASK = "What is the capital of the UK? Use the tool, then answer.";

export const RECORDED_TURNS = recordedTurns(
  repoPath("test", "fixtures", "openai", "pydantic-ai", "test_openai", "test_run_stream_sync_streams_real_model.yaml"),
  "real gpt-4o-mini turns recorded by pydantic-ai's test suite",
);

/** Pretend it asks a paid geography API: tagged "network", so the workflow asks the user first. */
const getCapital = defineTool({
  name: "get_capital",
  description: "The capital city of a country.",
  parameters: z.object({ country: z.string().describe("Country name or code, e.g. UK") }),
  effectTags: ["network"],
  execute: ({ country }) => (/^(uk|united kingdom|great britain)$/i.test(country.trim()) ? "London" : `unknown country: ${country}`),
});

/** A call the workflow shows the user: what the agent wants to run (id, tool, arguments, reason). */
export type PendingCall = PendingApproval;

/** Build the workflow around an agent machine. */
export function createTripPlanner(agent: ReturnType<typeof createReactMachine>) {
  return setup({
    types: {
      context: {} as { question: string; pending: PendingCall[]; destination: string | null; failure: string | null },
      input: {} as { question: string },
      events: {} as { type: "user.approve"; callId: string } | { type: "user.reject"; callId: string; reason: string },
      output: {} as { destination: string | null; failure: string | null },
    },
    actors: { agent },
  }).createMachine({
    id: "tripPlanner",
    context: ({ input }) => ({ question: input.question, pending: [], destination: null, failure: null }),
    initial: "researching",
    states: {
      researching: {
        invoke: {
          id: "agent",
          src: "agent",
          input: ({ context }) => ({ messages: [human(context.question)] }),
          // Every change of the agent's snapshot: keep the list of calls waiting for the user.
          // Emitted events reach `actor.on` listeners, not a parent machine: read the child's snapshot instead.
          onSnapshot: { actions: assign({ pending: ({ event }) => pendingApprovals(event.snapshot) }) },
          onDone: [
            {
              guard: ({ event }) => event.output.status === "succeeded",
              target: "booking",
              actions: assign({ destination: ({ event }) => event.output.finalAnswer, pending: [] }),
            },
            { target: "failed", actions: assign({ failure: ({ event }) => failureLine(event.output), pending: [] }) },
          ],
          onError: { target: "failed", actions: assign({ failure: ({ event }) => String(event.error) }) },
        },
        on: {
          // The user's decisions go to the agent, which validates them (unknown ids are refused there).
          "user.approve": { actions: sendTo("agent", ({ event }) => ({ type: "guard.approve" as const, callId: event.callId })) },
          "user.reject": { actions: sendTo("agent", ({ event }) => ({ type: "guard.reject" as const, callId: event.callId, reason: event.reason })) },
        },
      },
      // The rest of your workflow would go on from here (search flights, ...).
      booking: { type: "final" },
      failed: { type: "final" },
    },
    output: ({ context }) => ({ destination: context.destination, failure: context.failure }),
  });
}

export interface ChildActorResult {
  destination: string | null;
  failure: string | null;
  /** The calls the user was asked about. */
  asked: PendingCall[];
  /** The workflow's states, in order. */
  states: string[];
}

export async function main(options: EndpointOptions & { log?: (line: string) => void } = {}): Promise<ChildActorResult> {
  const log = options.log ?? console.log;
  const endpoint = await connectModel(RECORDED_TURNS, options);
  log(endpoint.banner);
  try {
    const agent = createReactMachine({
      modelClient: endpoint.modelClient,
      tools: [getCapital],
      constraints: [requireApproval({ effectTags: ["network"] })],
    });
    const planner = createActor(createTripPlanner(agent), { input: { question: TASK } });
    const asked: PendingCall[] = [];
    const states: string[] = [];

    // The "user interface": shows the workflow's state and answers each pending call once.
    planner.subscribe((snapshot) => {
      const state = String(snapshot.value);
      if (states.at(-1) !== state) {
        states.push(state);
        log(`workflow: ${state}`);
      }
      for (const call of snapshot.context.pending) {
        if (asked.some((seen) => seen.callId === call.callId)) continue;
        asked.push(call);
        log(`user asked: may the agent run ${call.name} ${call.arguments}? yes`);
        planner.send({ type: "user.approve", callId: call.callId });
      }
    });

    planner.start();
    const result = await toPromise(planner);
    if (result.failure !== null) {
      log(result.failure);
      throw new ExampleRunFailed(result.failure);
    }
    log(`destination: ${result.destination}`);
    return { ...result, asked, states };
  } finally {
    await endpoint.close();
  }
}
