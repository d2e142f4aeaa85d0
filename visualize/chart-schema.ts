import { z } from "zod";
import { STATE_TYPES } from "./chart.js";

/*
 * The chart's zod schemas, for reading it back from a recording's header (`recording-format.ts`).
 * Apart from `chart.ts`, which builds charts from machines: recording a run or drawing a chart
 * does not build these schemas, reading a recording does.
 */

export const StateTypeSchema = z.enum(STATE_TYPES);

export interface ChartState {
  /** The XState id: the machine id and the path, joined with "." (e.g. "ReActAgent.Evaluating.CheckAbort"). */
  id: string;
  key: string;
  type: z.infer<typeof StateTypeSchema>;
  /** Id of the initial child (compound states). */
  initial?: string;
  children: ChartState[];
  /** Actors invoked while the state is active. */
  invokes: { id: string; src: string }[];
}

export const ChartStateSchema: z.ZodType<ChartState> = z.lazy(() =>
  z.object({
    id: z.string(),
    key: z.string(),
    type: StateTypeSchema,
    initial: z.string().optional(),
    children: z.array(ChartStateSchema),
    invokes: z.array(z.object({ id: z.string(), src: z.string() })),
  }),
);

export const TransitionKindSchema = z.enum(["event", "always", "done", "error", "after", "snapshot", "stateDone"]);
export type TransitionKind = z.infer<typeof TransitionKindSchema>;

export const ChartTransitionSchema = z.object({
  /** Stable within a machine: `${source}#${event or "always"}#${index among that event's candidates}`. */
  id: z.string(),
  source: z.string(),
  /** Empty for a targetless transition (actions only, no state change). */
  targets: z.array(z.string()),
  /** The event descriptor ("" for eventless `always` transitions). */
  event: z.string(),
  kind: TransitionKindSchema,
  label: z.string(),
  guard: z.string().optional(),
  reenter: z.boolean(),
});
export type ChartTransition = z.infer<typeof ChartTransitionSchema>;

export const ChartSchema = z.object({
  machineId: z.string(),
  root: ChartStateSchema,
  transitions: z.array(ChartTransitionSchema),
});
export type Chart = z.infer<typeof ChartSchema>;
