import type { RunAnalysis, TimelineEntry, TimelineKind } from "./analysis.js";
import { clip, esc, formatCount, formatMs, n, textWidth } from "./html.js";

/**
 * The run on a time axis: one lane each for model calls, tool calls and approvals, a bar per call
 * (parallel calls stack in rows), the loop's iterations as shaded bands behind them. Bars are
 * `[data-timeline-entry][data-kind]` groups with their name, status, start, duration and tokens.
 */
const WIDTH = 1420;
const GUTTER = 118;
const RIGHT = 22;
const TOP = 30;
const ROW = 28;
const BAR = 20;
const LANE_PAD = 8;
const AXIS = 34;
const LABEL_SIZE = 11.5;

const LANES: { kind: TimelineKind; title: string }[] = [
  { kind: "model", title: "Model calls" },
  { kind: "tool", title: "Tool calls" },
  { kind: "approval", title: "Approvals" },
];

function niceStep(total: number, targetTicks: number): number {
  const raw = total / targetTicks;
  const power = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * power >= raw) return m * power;
  return 10 * power;
}

export function entryLabel(e: TimelineEntry): string {
  // A nested agent's call is labelled with that agent (the last level of its path).
  const via = e.agent ? `${e.agent.slice(e.agent.lastIndexOf("›") + 1).replace(/ \(call .*\)$/, "").trim()} › ` : "";
  return via + ownLabel(e);
}

function ownLabel(e: TimelineEntry): string {
  const duration = formatMs(e.durationMs);
  switch (e.kind) {
    case "model":
      return `${e.name}${e.round ? ` · round ${e.round}` : ""}${e.tokens ? ` · ${formatCount(e.tokens.totalTokens)} tok` : ""} · ${duration}`;
    case "tool":
      return `${e.name} · ${duration}${e.status === "failed" ? " · failed" : ""}`;
    case "approval":
      return `${e.name} · ${e.status === "unfinished" ? "waiting" : e.status} after ${duration}`;
  }
}

export function renderTimelineSvg(analysis: RunAnalysis): string {
  const total = Math.max(1, analysis.summary.durationMs, ...analysis.timeline.map((e) => e.end));
  const plot = WIDTH - GUTTER - RIGHT;
  const x = (t: number) => GUTTER + (Math.max(0, t) / total) * plot;

  // Pack each lane into rows: an entry (bar plus label when it does not fit inside) needs free space.
  type Placed = { entry: TimelineEntry; row: number; x0: number; x1: number; where: "in" | "right" | "left"; label: string };
  const lanes = LANES.map((lane) => {
    const rows: number[] = [];
    const placed: Placed[] = [];
    const entries = analysis.timeline.filter((e) => e.kind === lane.kind).sort((a, b) => a.start - b.start);
    for (const entry of entries) {
      const x0 = x(entry.start);
      const x1 = Math.max(x(entry.end), x0 + 4);
      const label = entryLabel(entry);
      const labelW = textWidth(label, LABEL_SIZE) + 14;
      // Inside the bar when it fits, else after it, else (near the right edge) before it.
      const where = x1 - x0 >= labelW ? "in" : x1 + labelW <= WIDTH - 4 ? "right" : "left";
      const start = where === "left" ? x0 - labelW : x0;
      const extent = where === "right" ? x1 + labelW : x1;
      let row = rows.findIndex((end) => end + 4 <= start);
      if (row < 0) {
        row = rows.length;
        rows.push(extent);
      } else rows[row] = extent;
      placed.push({ entry, row, x0, x1, where, label });
    }
    return { ...lane, placed, rows: Math.max(1, rows.length) };
  });

  const laneTops: number[] = [];
  let y = TOP;
  for (const lane of lanes) {
    laneTops.push(y);
    y += lane.rows * ROW + LANE_PAD * 2;
  }
  const plotBottom = y;
  const height = plotBottom + AXIS;
  const parts: string[] = [];
  parts.push(`<svg id="timeline" class="timeline" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${WIDTH} ${n(height)}" width="${WIDTH}" height="${n(height)}" role="img" aria-label="Timeline of model calls, tool calls and approvals">`);

  // Iteration bands behind everything.
  analysis.iterations.forEach((it, i) => {
    const x0 = x(it.start);
    const x1 = Math.max(x(it.end), x0 + 1);
    parts.push(
      `<g class="iteration" data-iteration="${it.iteration}"><rect class="band ${i % 2 === 0 ? "even" : "odd"}" x="${n(x0)}" y="${TOP - 22}" width="${n(x1 - x0)}" height="${n(plotBottom - TOP + 22)}"/>` +
        (x1 - x0 > 64 ? `<text class="band-label" x="${n(x0 + 6)}" y="${TOP - 8}">iteration ${it.iteration + 1}</text>` : "") +
        `</g>`,
    );
  });

  const step = niceStep(total, 8);
  const ticks: number[] = [];
  for (let t = 0; t <= total + step / 1000; t += step) ticks.push(t);
  for (const t of ticks) parts.push(`<line class="grid" x1="${n(x(t))}" x2="${n(x(t))}" y1="${TOP - 22}" y2="${n(plotBottom)}"/>`);

  lanes.forEach((lane, i) => {
    const top = laneTops[i]!;
    const laneH = lane.rows * ROW + LANE_PAD * 2;
    parts.push(`<g class="lane" data-lane="${lane.kind}">`);
    parts.push(`<line class="lane-sep" x1="0" x2="${WIDTH}" y1="${n(top + laneH)}" y2="${n(top + laneH)}"/>`);
    parts.push(`<text class="lane-title" x="12" y="${n(top + LANE_PAD + ROW / 2 + 4)}">${lane.title}</text>`);
    parts.push(`<text class="lane-count" x="12" y="${n(top + LANE_PAD + ROW / 2 + 19)}">${lane.placed.length === 0 ? "none" : `${lane.placed.length} · ${formatMs(lane.placed.reduce((sum, p) => sum + p.entry.durationMs, 0))}`}</text>`);
    for (const p of lane.placed) {
      const e = p.entry;
      const barY = top + LANE_PAD + p.row * ROW + (ROW - BAR) / 2;
      const tokens = e.tokens ? ` data-tokens="${e.tokens.totalTokens}" data-prompt-tokens="${e.tokens.promptTokens}" data-completion-tokens="${e.tokens.completionTokens}"` : "";
      const tip = [entryLabel(e), `status: ${e.status}`, `iteration ${e.iteration + 1}`, `starts at ${formatMs(e.start)}`, e.detail ? clip(e.detail, 300) : "", e.reasoning ? `reasoning: ${clip(e.reasoning, 300)}` : ""].filter(Boolean).join("\n");
      parts.push(
        `<g class="entry kind-${e.kind} status-${e.status}" data-timeline-entry="${esc(e.id)}" data-kind="${e.kind}" data-name="${esc(e.name)}" data-status="${e.status}" data-start-ms="${Math.round(e.start)}" data-duration-ms="${Math.round(e.durationMs)}" data-iteration="${e.iteration}"${tokens}>` +
          `<title>${esc(tip)}</title>` +
          `<rect x="${n(p.x0)}" y="${n(barY)}" width="${n(p.x1 - p.x0)}" height="${BAR}" rx="5"/>` +
          `<text class="${p.where === "in" ? "in" : "out"}" x="${n(p.where === "in" ? p.x0 + 7 : p.where === "right" ? p.x1 + 6 : p.x0 - 6)}" y="${n(barY + BAR / 2 + 4)}"${p.where === "left" ? ` text-anchor="end"` : ""}>${esc(p.label)}</text></g>`,
      );
    }
    parts.push(`</g>`);
  });

  // Denied calls, refused approvals, guardrails: marks on the tool, approval and model lanes.
  for (const m of analysis.markers) {
    const lane = m.kind === "denied" ? 1 : m.kind === "guardrail" ? 0 : 2;
    const cy = laneTops[lane]! + LANE_PAD + ROW / 2;
    const cx = x(m.t);
    parts.push(`<g class="marker marker-${m.kind}" data-marker="${m.kind}" data-name="${esc(m.name)}"><title>${esc(`${m.kind}: ${m.name}: ${m.detail}`)}</title><path d="M${n(cx)},${n(cy - 7)} l7,7 l-7,7 l-7,-7 z"/></g>`);
  }

  // Time axis.
  parts.push(`<g class="axis"><line x1="${GUTTER}" x2="${WIDTH - RIGHT}" y1="${n(plotBottom)}" y2="${n(plotBottom)}"/>`);
  for (const t of ticks) {
    const tx = x(t);
    parts.push(`<line class="tick" x1="${n(tx)}" x2="${n(tx)}" y1="${n(plotBottom)}" y2="${n(plotBottom + 5)}"/>`);
    parts.push(`<text x="${n(tx)}" y="${n(plotBottom + 19)}" text-anchor="middle">${formatMs(t)}</text>`);
  }
  parts.push(`</g></svg>`);
  return parts.join("\n");
}
