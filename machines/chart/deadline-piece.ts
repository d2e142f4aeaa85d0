import { createApprovalTimerActor } from "../../actors/approval-timer.js";
import type { ChartBuild } from "./build.js";
import type { AgentInvoke } from "./piece.js";

/**
 * The run's deadline (`config.maxDurationMs`): an absolute time, fixed in `loop.deadline` when the
 * run starts (so a restored run keeps the original one), watched by `deadlineTimer` on the root for
 * the whole run. When it passes, the run fails (deadline) from whatever state it is in, and leaving
 * that state stops what runs there (the model call, the tools, a nested agent).
 */

export function deadlineImplementation(build: ChartBuild) {
  // The approval timer's logic: it waits for an absolute deadline, what is left of it after a restore.
  return { actors: { deadlineTimer: createApprovalTimerActor(build.now) } };
}

/** When a fresh run must end, with `config.maxDurationMs`. */
export function runDeadline(build: ChartBuild): { deadline?: number } {
  const duration = build.config.maxDurationMs;
  return duration === undefined ? {} : { deadline: build.now() + duration };
}

/** The timer on the root, only with `config.maxDurationMs`. */
export function deadlineWatch(build: ChartBuild): AgentInvoke[] {
  if (!build.features.deadline) return [];
  return [
    {
      id: build.childId("deadlineTimer"),
      src: "deadlineTimer",
      // A snapshot saved before deadlines existed has none: such a run keeps having none.
      input: ({ context }) => ({ deadline: context.loop.deadline ?? null }),
      onDone: {
        target: ".Failed",
        description: "The run's deadline (config.maxDurationMs from its start) passed: it fails (deadline), stopping whatever runs.",
        actions: { type: "terminate", params: { reason: "deadline" } },
      },
    },
  ];
}
