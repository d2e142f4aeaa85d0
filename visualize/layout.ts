import type { Chart, ChartState, ChartTransition } from "./chart.js";
import { textWidth } from "./html.js";

/**
 * Lays a statechart out as nested boxes with arrows, without a browser. Children of a compound
 * state are placed in columns by rank (longest path from the initial state, loops ignored),
 * left-to-right at even depths and top-to-bottom at odd ones, so nesting alternates and the chart
 * stays compact. Arrows are drawn where they stay short (between neighbouring columns, and as arcs
 * over a skipped sibling); every other transition is written as a line inside its source box
 * ("llm error → Failed", "↻ guard.approve"), which reads better than an arrow across the chart.
 */

export type Direction = "LR" | "TB";

/** A transition written inside a box (or in a compound's header) instead of drawn as an arrow. */
export interface BoxLine {
  transition: ChartTransition;
  target?: string;
  text: string;
}

export interface StateBox {
  state: ChartState;
  depth: number;
  x: number;
  y: number;
  w: number;
  h: number;
  compound: boolean;
  dir: Direction;
  /** Lines inside an atomic box, or header items of a compound. */
  lines: BoxLine[];
  children: StateBox[];
  parent?: StateBox;
}

export interface Point {
  x: number;
  y: number;
}

export interface EdgeRoute {
  transition: ChartTransition;
  target: string;
  /** SVG path data of a cubic Bézier. */
  d: string;
  label: Point;
  kind: "arrow" | "arc";
}

export interface InitialMarker {
  parent: string;
  from: Point;
  to: Point;
}

export interface ChartLayout {
  width: number;
  height: number;
  boxes: Map<string, StateBox>;
  edges: EdgeRoute[];
  initials: InitialMarker[];
}

export const LAYOUT = {
  titleSize: 13.5,
  lineSize: 11,
  atomicMinW: 118,
  atomicTitleH: 36,
  lineH: 15,
  header: 30,
  pad: 16,
  startPad: 26,
  crossGap: 34,
  mainGapLR: 50,
  mainGapTB: 46,
  arcMargin: 34,
  margin: 12,
} as const;

interface Work {
  chart: Chart;
  byId: Map<string, ChartState>;
  parentOf: Map<string, string>;
  /** Rank of each state among its siblings. */
  rank: Map<string, number>;
  /** Column order of each compound's children. */
  columns: Map<string, ChartState[][]>;
  lines: Map<string, BoxLine[]>;
  arrows: { t: ChartTransition; target: string; block: string; from: string; to: string; kind: "arrow" | "arc" }[];
}

function ancestorsOf(work: Work, id: string): string[] {
  const out: string[] = [];
  for (let s: string | undefined = id; s !== undefined; s = work.parentOf.get(s)) out.push(s);
  return out;
}

/** The child of `block` that is `id` or contains it. */
function childWithin(work: Work, block: string, id: string): string | undefined {
  let previous: string | undefined;
  for (let s: string | undefined = id; s !== undefined; s = work.parentOf.get(s)) {
    if (s === block) return previous;
    previous = s;
  }
  return undefined;
}

function assignRanks(work: Work, state: ChartState): void {
  const children = state.children;
  if (children.length === 0) return;
  const ids = new Set(children.map((c) => c.id));
  const out = new Map<string, Set<string>>(children.map((c) => [c.id, new Set<string>()]));
  for (const t of work.chart.transitions) {
    for (const target of t.targets) {
      const a = childWithin(work, state.id, t.source);
      const b = childWithin(work, state.id, target);
      if (a && b && a !== b && ids.has(a) && ids.has(b)) out.get(a)!.add(b);
    }
  }
  // Depth-first from the initial child: an edge to a state still on the stack closes a loop.
  const order: string[] = [];
  const onStack = new Set<string>();
  const seen = new Set<string>();
  const back = new Set<string>();
  const visit = (id: string) => {
    seen.add(id);
    onStack.add(id);
    order.push(id);
    for (const next of out.get(id)!) {
      if (onStack.has(next)) back.add(`${id}>${next}`);
      else if (!seen.has(next)) visit(next);
    }
    onStack.delete(id);
  };
  if (state.initial && ids.has(state.initial)) visit(state.initial);
  for (const c of children) if (!seen.has(c.id)) visit(c.id);

  const rank = new Map<string, number>(children.map((c) => [c.id, 0]));
  // Longest path over forward edges; the DFS order is a valid topological order for them.
  for (let changed = true, guard = 0; changed && guard < children.length + 1; guard++) {
    changed = false;
    for (const id of order) {
      for (const next of out.get(id)!) {
        if (back.has(`${id}>${next}`)) continue;
        if (rank.get(next)! < rank.get(id)! + 1) {
          rank.set(next, rank.get(id)! + 1);
          changed = true;
        }
      }
    }
  }
  // A state that only loops back (like Retry) sits under its single predecessor instead of
  // opening a column of its own.
  const under = new Map<string, string>();
  for (const c of children) {
    const targets = [...out.get(c.id)!];
    if (c.id === state.initial || c.type === "final" || targets.length === 0) continue;
    if (!targets.every((next) => back.has(`${c.id}>${next}`))) continue;
    const preds = children.filter((p) => out.get(p.id)!.has(c.id) && !back.has(`${p.id}>${c.id}`));
    if (preds.length === 1) {
      rank.set(c.id, rank.get(preds[0]!.id)!);
      under.set(c.id, preds[0]!.id);
    }
  }
  const count = Math.max(...rank.values()) + 1;
  const columns: ChartState[][] = Array.from({ length: count }, () => []);
  const byOrder = [...children].sort((a, b) => order.indexOf(a.id) - order.indexOf(b.id));
  // Finals first in their column (they are where runs end: easiest to find at the top).
  const sorted = [...byOrder.filter((c) => c.type === "final"), ...byOrder.filter((c) => c.type !== "final" && !under.has(c.id))];
  for (const c of sorted) columns[rank.get(c.id)!]!.push(c);
  for (const [child, pred] of under) {
    const column = columns[rank.get(child)!]!;
    column.splice(column.findIndex((s) => s.id === pred) + 1, 0, work.byId.get(child)!);
  }
  work.columns.set(state.id, columns.filter((column) => column.length > 0));
  const compact = work.columns.get(state.id)!;
  compact.forEach((column, i) => column.forEach((s) => work.rank.set(s.id, i)));
  for (const c of children) assignRanks(work, c);
}

function addLine(work: Work, owner: string, line: BoxLine): void {
  const list = work.lines.get(owner) ?? [];
  list.push(line);
  work.lines.set(owner, list);
}

function classifyEdges(work: Work): void {
  for (const t of work.chart.transitions) {
    const source = work.byId.get(t.source);
    if (!source) continue;
    if (t.targets.length === 0) {
      addLine(work, t.source, { transition: t, text: `↻ ${t.label}` });
      continue;
    }
    for (const target of t.targets) {
      const targetState = work.byId.get(target);
      if (!targetState) continue;
      if (target === t.source) {
        addLine(work, t.source, { transition: t, target, text: `↺ ${t.label}${t.reenter ? " (re-enter)" : ""}` });
        continue;
      }
      const sourceAncestors = ancestorsOf(work, t.source);
      const targetAncestors = ancestorsOf(work, target);
      if (targetAncestors.includes(t.source) || sourceAncestors.includes(target)) {
        addLine(work, t.source, { transition: t, target, text: `${t.label} → ${targetState.key}` });
        continue;
      }
      const block = targetAncestors.find((id) => sourceAncestors.includes(id))!;
      const a = childWithin(work, block, t.source)!;
      const b = childWithin(work, block, target)!;
      const gap = Math.abs(work.rank.get(a)! - work.rank.get(b)!);
      if (gap <= 1) work.arrows.push({ t, target, block, from: a, to: b, kind: "arrow" });
      else if (a === t.source && b === target) work.arrows.push({ t, target, block, from: a, to: b, kind: "arc" });
      else addLine(work, t.source, { transition: t, target, text: `${t.label} → ${targetState.key}` });
    }
  }
}

/** Arrow labels break before their condition ("llm done" / "[guarded]") to keep gaps narrow. */
export function labelLines(label: string): string[] {
  const cut = label.indexOf(" [");
  if (cut > 0) return [label.slice(0, cut), label.slice(cut + 1)];
  const space = label.lastIndexOf(" ");
  return label.length > 12 && space > 0 ? [label.slice(0, space), label.slice(space + 1)] : [label];
}

/** Room for a label pill, a count ("×12") included. */
export function labelSize(label: string): { w: number; h: number } {
  const lines = labelLines(label);
  return { w: Math.max(...lines.map((l) => textWidth(l, LAYOUT.lineSize))) + 40, h: lines.length * 14 + 5 };
}

function measure(work: Work, state: ChartState, depth: number, parent: StateBox | undefined, dirs: Map<string, Direction>): StateBox {
  const lines = work.lines.get(state.id) ?? [];
  const dir = dirs.get(state.id) ?? (depth % 2 === 0 ? "LR" : "TB");
  const box: StateBox = { state, depth, x: 0, y: 0, w: 0, h: 0, compound: state.children.length > 0, dir, lines, children: [] };
  if (parent) box.parent = parent;
  if (!box.compound) {
    const invoke = state.invokes.length > 0 ? `invokes ${state.invokes.map((i) => i.src).join(", ")}` : "";
    const widths = [
      LAYOUT.atomicMinW,
      textWidth(state.key, LAYOUT.titleSize) + 52,
      invoke ? textWidth(invoke, LAYOUT.lineSize) + 28 : 0,
      ...lines.map((l) => textWidth(l.text, LAYOUT.lineSize) + 56),
    ];
    box.w = Math.ceil(Math.max(...widths));
    box.h = LAYOUT.atomicTitleH + (invoke ? 14 : 0) + lines.length * LAYOUT.lineH + (lines.length > 0 ? 6 : 0);
    return box;
  }
  box.children = state.children.map((c) => measure(work, c, depth + 1, box, dirs));
  const boxOf = new Map(box.children.map((b) => [b.state.id, b]));
  const columns = work.columns.get(state.id)!.map((column) => column.map((s) => boxOf.get(s.id)!));
  const lr = box.dir === "LR";
  const mainOf = (b: StateBox) => (lr ? b.w : b.h);
  const crossOf = (b: StateBox) => (lr ? b.h : b.w);
  const colMain = columns.map((column) => Math.max(...column.map(mainOf)));
  // Gaps between neighbours in one column: room for the label of an arrow between them.
  const between = (a: StateBox, b: StateBox) =>
    work.arrows.filter((e) => e.block === state.id && e.kind === "arrow" && ((e.from === a.state.id && e.to === b.state.id) || (e.from === b.state.id && e.to === a.state.id)));
  const crossGaps = columns.map((column) =>
    column.slice(1).map((b, j) => {
      const sizes = between(column[j]!, b).map((e) => labelSize(e.t.label));
      return Math.max(LAYOUT.crossGap, ...sizes.map((z) => (lr ? z.h + 22 : z.w + 16)));
    }),
  );
  const colCross = columns.map((column, i) => column.reduce((sum, b) => sum + crossOf(b), 0) + crossGaps[i]!.reduce((sum, g) => sum + g, 0));
  const gaps = columns.slice(1).map((_, i) => {
    const labels = work.arrows.filter(
      (a) => a.block === state.id && a.kind === "arrow" && work.rank.get(a.from) !== work.rank.get(a.to) && Math.min(work.rank.get(a.from)!, work.rank.get(a.to)!) === i,
    );
    if (!lr) return Math.max(LAYOUT.mainGapTB, ...labels.map((a) => labelSize(a.t.label).h + 22));
    // Several labels in one gap need room to sit side by side rather than on top of each other.
    const widest = Math.max(0, ...labels.map((a) => labelSize(a.t.label).w));
    return Math.max(LAYOUT.mainGapLR, widest + 16 + Math.min(2, Math.max(0, labels.length - 1)) * 0.45 * widest);
  });
  const arcs = work.arrows.some((a) => a.block === state.id && a.kind === "arc");
  const contentMain = colMain.reduce((s, v) => s + v, 0) + gaps.reduce((s, v) => s + v, 0);
  const contentCross = Math.max(...colCross);
  const invokeText = state.invokes.length > 0 ? textWidth(`invokes ${state.invokes.map((i) => i.src).join(", ")}`, LAYOUT.lineSize) + 70 : 0;
  const anyText = lines.length > 0 ? textWidth("from any state:", LAYOUT.lineSize) + 10 : 0;
  const headerText = textWidth(state.key, LAYOUT.titleSize) + anyText + lines.reduce((s, l) => s + textWidth(l.text, LAYOUT.lineSize) + 26, 0) + invokeText + 60;
  const arc = arcs ? LAYOUT.arcMargin : 0;
  const inner = lr
    ? { w: LAYOUT.startPad + contentMain, h: arc + contentCross }
    : { w: arc + contentCross, h: LAYOUT.startPad + contentMain };
  box.w = Math.ceil(Math.max(inner.w + LAYOUT.pad * 2, headerText));
  box.h = Math.ceil(inner.h + LAYOUT.header + LAYOUT.pad);
  layoutCache.set(box, { columns, colMain, colCross, crossGaps, gaps, arc });
  return box;
}

const layoutCache = new WeakMap<StateBox, { columns: StateBox[][]; colMain: number[]; colCross: number[]; crossGaps: number[][]; gaps: number[]; arc: number }>();

function place(box: StateBox, x: number, y: number, initials: InitialMarker[]): void {
  box.x = x;
  box.y = y;
  const cached = layoutCache.get(box);
  if (!cached) return;
  const { columns, colMain, colCross, crossGaps, gaps, arc } = cached;
  const lr = box.dir === "LR";
  // The content area, after the header, the padding, the initial marker and arc room.
  const ox = x + LAYOUT.pad + (lr ? LAYOUT.startPad : arc);
  const oy = y + LAYOUT.header + (lr ? arc : LAYOUT.startPad);
  const availCross = lr ? box.h - LAYOUT.header - LAYOUT.pad - arc : box.w - LAYOUT.pad * 2 - arc;
  const contentMain = colMain.reduce((s, v) => s + v, 0) + gaps.reduce((s, v) => s + v, 0);
  const availMain = lr ? box.w - LAYOUT.pad * 2 - LAYOUT.startPad : box.h - LAYOUT.header - LAYOUT.pad - LAYOUT.startPad;
  let main = (lr ? ox : oy) + Math.max(0, (availMain - contentMain) / 2);
  columns.forEach((column, i) => {
    let cross = (lr ? oy : ox) + (availCross - colCross[i]!) / 2;
    column.forEach((child, j) => {
      const offset = (colMain[i]! - (lr ? child.w : child.h)) / 2;
      if (lr) place(child, main + offset, cross, initials);
      else place(child, cross, main + offset, initials);
      cross += (lr ? child.h : child.w) + (crossGaps[i]![j] ?? 0);
    });
    main += colMain[i]! + (gaps[i] ?? 0);
  });
  const initial = box.children.find((c) => c.state.id === box.state.initial);
  if (initial) {
    initials.push(
      lr
        ? { parent: box.state.id, from: { x: initial.x - LAYOUT.startPad + 6, y: initial.y + initial.h / 2 }, to: { x: initial.x, y: initial.y + initial.h / 2 } }
        : { parent: box.state.id, from: { x: initial.x + initial.w / 2, y: initial.y - LAYOUT.startPad + 6 }, to: { x: initial.x + initial.w / 2, y: initial.y } },
    );
  }
}

// ---- Routing -------------------------------------------------------------------------------------

type Side = "left" | "right" | "top" | "bottom";
interface Port {
  box: StateBox;
  side: Side;
  along: number;
}

const clamp = (v: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, v));

function bezier(p0: Point, p1: Point, p2: Point, p3: Point, t: number): Point {
  const u = 1 - t;
  return {
    x: u * u * u * p0.x + 3 * u * u * t * p1.x + 3 * u * t * t * p2.x + t * t * t * p3.x,
    y: u * u * u * p0.y + 3 * u * u * t * p1.y + 3 * u * t * t * p2.y + t * t * t * p3.y,
  };
}

function inside(p: Point, b: StateBox, inflate: number): boolean {
  return p.x > b.x - inflate && p.x < b.x + b.w + inflate && p.y > b.y - inflate && p.y < b.y + b.h + inflate;
}

function portPoint(port: Port): Point {
  const b = port.box;
  switch (port.side) {
    case "left":
      return { x: b.x, y: port.along };
    case "right":
      return { x: b.x + b.w, y: port.along };
    case "top":
      return { x: port.along, y: b.y };
    case "bottom":
      return { x: port.along, y: b.y + b.h };
  }
}

const NORMAL: Record<Side, Point> = { left: { x: -1, y: 0 }, right: { x: 1, y: 0 }, top: { x: 0, y: -1 }, bottom: { x: 0, y: 1 } };

/** Route every arrow; `problems` counts arrows that cross a box and labels that overlap something. */
function route(work: Work, boxes: Map<string, StateBox>): { edges: EdgeRoute[]; problems: number } {
  let problems = 0;
  const all = [...boxes.values()];
  const planned = work.arrows.map((a) => {
    const s = boxes.get(a.t.source)!;
    const t = boxes.get(a.target)!;
    if (a.kind === "arc") return { a, s, t, from: undefined as Port | undefined, to: undefined as Port | undefined };
    // Between columns of the block the arrow runs along its direction; inside one column, across it.
    const block = boxes.get(a.block)!;
    const sameColumn = work.rank.get(a.from) === work.rank.get(a.to);
    const horizontal = (block.dir === "LR") !== sameColumn;
    const sc = { x: s.x + s.w / 2, y: s.y + s.h / 2 };
    const tc = { x: t.x + t.w / 2, y: t.y + t.h / 2 };
    const from: Port = horizontal
      ? { box: s, side: tc.x >= sc.x ? "right" : "left", along: clamp(tc.y, s.y + 10, s.y + s.h - 10) }
      : { box: s, side: tc.y >= sc.y ? "bottom" : "top", along: clamp(tc.x, s.x + 12, s.x + s.w - 12) };
    const to: Port = horizontal
      ? { box: t, side: tc.x >= sc.x ? "left" : "right", along: clamp(sc.y, t.y + 10, t.y + t.h - 10) }
      : { box: t, side: tc.y >= sc.y ? "top" : "bottom", along: clamp(sc.x, t.x + 12, t.x + t.w - 12) };
    // Two ends that face each other along one line make a straight arrow.
    if (horizontal) {
      const lo = Math.max(s.y, t.y) + 10;
      const hi = Math.min(s.y + s.h, t.y + t.h) - 10;
      if (lo <= hi) from.along = to.along = clamp((from.along + to.along) / 2, lo, hi);
    } else {
      const lo = Math.max(s.x, t.x) + 12;
      const hi = Math.min(s.x + s.w, t.x + t.w) - 12;
      if (lo <= hi) from.along = to.along = clamp((from.along + to.along) / 2, lo, hi);
    }
    return { a, s, t, from, to };
  });
  // Ports on the same side of a box must not coincide.
  const bySide = new Map<string, Port[]>();
  for (const p of planned) {
    for (const port of [p.from, p.to]) {
      if (!port) continue;
      const key = `${port.box.state.id}|${port.side}`;
      const list = bySide.get(key) ?? [];
      list.push(port);
      bySide.set(key, list);
    }
  }
  for (const ports of bySide.values()) {
    ports.sort((a, b) => a.along - b.along);
    for (let i = 1; i < ports.length; i++) if (ports[i]!.along - ports[i - 1]!.along < 14) ports[i]!.along = ports[i - 1]!.along + 14;
  }

  const labels: { x: number; y: number; w: number; h: number }[] = [];
  const atomics = all.filter((b) => !b.compound);
  const labelFits = (p: Point, w: number, h: number) => {
    const rect = { x: p.x - w / 2, y: p.y - h / 2, w, h };
    const overlaps = (o: { x: number; y: number; w: number; h: number }) => rect.x < o.x + o.w && rect.x + rect.w > o.x && rect.y < o.y + o.h && rect.y + rect.h > o.y;
    return !labels.some(overlaps) && !atomics.some((b) => overlaps(b));
  };

  const edges = planned.map(({ a, s, t, from, to }): EdgeRoute => {
    let p0: Point;
    let p1: Point;
    let p2: Point;
    let p3: Point;
    if (a.kind === "arc" || !from || !to) {
      const parent = boxes.get(a.block)!;
      // Over every sibling between the two ends, in the room the block keeps for arcs.
      const lo = Math.min(work.rank.get(a.from)!, work.rank.get(a.to)!);
      const hi = Math.max(work.rank.get(a.from)!, work.rank.get(a.to)!);
      const between = parent.children.filter((c) => work.rank.get(c.state.id)! >= lo && work.rank.get(c.state.id)! <= hi);
      if (parent.dir === "LR") {
        const top = Math.min(...between.map((b) => b.y)) - LAYOUT.arcMargin + 8;
        p0 = { x: s.x + s.w * 0.7, y: s.y };
        p3 = { x: t.x + t.w * 0.3, y: t.y };
        p1 = { x: p0.x + 20, y: top - (s.y - top) * 0.35 };
        p2 = { x: p3.x - 20, y: top - (t.y - top) * 0.35 };
      } else {
        const left = Math.min(...between.map((b) => b.x)) - LAYOUT.arcMargin + 8;
        p0 = { x: s.x, y: s.y + s.h * 0.7 };
        p3 = { x: t.x, y: t.y + t.h * 0.3 };
        p1 = { x: left - (s.x - left) * 0.35, y: p0.y + 20 };
        p2 = { x: left - (t.x - left) * 0.35, y: p3.y - 20 };
      }
    } else {
      p0 = portPoint(from);
      p3 = portPoint(to);
      const dist = Math.hypot(p3.x - p0.x, p3.y - p0.y);
      const reach = clamp(dist * 0.4, 18, 80);
      const n0 = NORMAL[from.side];
      const n3 = NORMAL[to.side];
      const base1 = { x: p0.x + n0.x * reach, y: p0.y + n0.y * reach };
      const base2 = { x: p3.x + n3.x * reach, y: p3.y + n3.y * reach };
      // Bend around boxes the arrow would cross (not its own ends or the boxes containing them).
      const exempt = new Set<StateBox>();
      for (let b: StateBox | undefined = s; b; b = b.parent) exempt.add(b);
      for (let b: StateBox | undefined = t; b; b = b.parent) exempt.add(b);
      const obstacles = all.filter((b) => !exempt.has(b));
      const perpendicular = from.side === "left" || from.side === "right" ? { x: 0, y: 1 } : { x: 1, y: 0 };
      const clear = (c1: Point, c2: Point) => {
        for (let i = 1; i < 24; i++) {
          const p = bezier(p0, c1, c2, p3, i / 24);
          if (obstacles.some((b) => inside(p, b, 3))) return false;
        }
        return true;
      };
      p1 = base1;
      p2 = base2;
      let routed = false;
      for (const offset of [0, -40, 40, -80, 80, -130, 130, -190, 190]) {
        const c1 = { x: base1.x + perpendicular.x * offset, y: base1.y + perpendicular.y * offset };
        const c2 = { x: base2.x + perpendicular.x * offset, y: base2.y + perpendicular.y * offset };
        if (clear(c1, c2)) {
          p1 = c1;
          p2 = c2;
          routed = true;
          break;
        }
      }
      if (!routed) problems += 1;
    }
    const size = labelSize(a.t.label);
    let label = bezier(p0, p1, p2, p3, 0.5);
    let placed = false;
    for (const at of [0.5, 0.4, 0.6, 0.3, 0.7, 0.22, 0.78]) {
      const candidate = bezier(p0, p1, p2, p3, at);
      if (labelFits(candidate, size.w, size.h)) {
        label = candidate;
        placed = true;
        break;
      }
    }
    if (!placed) problems += 1;
    labels.push({ x: label.x - size.w / 2, y: label.y - size.h / 2, w: size.w, h: size.h });
    const d = `M${p0.x},${p0.y} C${p1.x},${p1.y} ${p2.x},${p2.y} ${p3.x},${p3.y}`;
    return { transition: a.t, target: a.target, d, label, kind: a.kind };
  });
  return { edges, problems };
}

function layoutWith(work: Work, dirs: Map<string, Direction>): { layout: ChartLayout; problems: number } {
  const root = measure(work, work.chart.root, 0, undefined, dirs);
  const initials: InitialMarker[] = [];
  place(root, LAYOUT.margin, LAYOUT.margin, initials);
  const boxes = new Map<string, StateBox>();
  const collect = (b: StateBox) => {
    boxes.set(b.state.id, b);
    b.children.forEach(collect);
  };
  collect(root);
  const { edges, problems } = route(work, boxes);
  return { layout: { width: root.w + LAYOUT.margin * 2, height: root.h + LAYOUT.margin * 2, boxes, edges, initials }, problems };
}

export interface LayoutOptions {
  /** The screen area the chart should fit in, in pixels (default 1600 × 900). */
  maxWidth?: number;
  maxHeight?: number;
}

/**
 * Lay the chart out. Each compound's direction is chosen by trying the combinations (up to 8
 * compounds; beyond that directions alternate with depth) and keeping the one with the fewest
 * arrows across boxes and overlapping labels, then the one that needs the least shrinking to fit
 * `maxWidth` × `maxHeight`, then the smallest.
 * The top level reads left to right whenever that is as clean, because loops read best that way.
 */
export function layoutChart(chart: Chart, options: LayoutOptions = {}): ChartLayout {
  const byId = new Map<string, ChartState>();
  const parentOf = new Map<string, string>();
  const index = (s: ChartState) => {
    byId.set(s.id, s);
    for (const c of s.children) {
      parentOf.set(c.id, s.id);
      index(c);
    }
  };
  index(chart.root);
  const work: Work = { chart, byId, parentOf, rank: new Map(), columns: new Map(), lines: new Map(), arrows: [] };
  assignRanks(work, chart.root);
  classifyEdges(work);
  const maxWidth = options.maxWidth ?? 1600;
  const maxHeight = options.maxHeight ?? 900;
  const compounds = [...byId.values()].filter((s) => s.children.length > 0);
  if (compounds.length > 8) return layoutWith(work, new Map()).layout;
  let best: { layout: ChartLayout; score: number } | undefined;
  for (let mask = 0; mask < 1 << compounds.length; mask++) {
    const dirs = new Map<string, Direction>(compounds.map((c, i) => [c.id, mask & (1 << i) ? "TB" : "LR"]));
    const { layout, problems } = layoutWith(work, dirs);
    // How much the chart must shrink to fit the screen: every lost percent of text size counts.
    const scale = Math.min(1, maxWidth / layout.width, maxHeight / layout.height);
    const score = problems * 1e7 + (1 - scale) * 1e7 + layout.width * layout.height + (dirs.get(chart.root.id) === "TB" ? 2e5 : 0);
    if (!best || score < best.score) best = { layout, score };
  }
  return best!.layout;
}
