import type { AnyStateMachine } from "xstate";
import { describeMachine } from "./chart.js";
import { layoutChart } from "./layout.js";
import { renderChartSvg } from "./render-chart.js";
import { VIEWER_CSS } from "./viewer-style.js";

/**
 * The run viewer's statechart drawing for a live page: the same layout and SVG (every state a
 * `[data-state]` group, every transition a `[data-transition]`), with nothing visited yet. The page
 * marks states as the run enters them: class `visited` (the viewer's colours) and `current` on the
 * active states, which this stylesheet outlines.
 */
const CHART_CSS = VIEWER_CSS.split("\n")
  .filter((line) => line.startsWith(":root") || line.startsWith("  --") || line.startsWith(".chart") || line.startsWith("svg"))
  .join("\n");

const LIVE_CSS = `
.chart .state.current.atomic .frame { fill:#fef3c7; stroke:#d97706; stroke-width:3; }
.chart .state.current.compound > .frame { stroke:#f59e0b; stroke-width:2; }
.chart .state.current .title { fill:#92400e; }
`;

/** An HTML fragment: a `<style>` and the `<svg id="statechart">`, for a page to insert. */
export function renderLiveChart(machine: AnyStateMachine): string {
  const chart = describeMachine(machine);
  const svg = renderChartSvg(layoutChart(chart), { visits: {}, transitions: {} }, `statechart of ${machine.id}`);
  return `<style>${CHART_CSS}${LIVE_CSS}</style>\n${svg}`;
}
