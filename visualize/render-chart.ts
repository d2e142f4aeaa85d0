import { esc, n, textWidth } from "./html.js";
import { LAYOUT, labelLines, type BoxLine, type ChartLayout, type EdgeRoute, type StateBox } from "./layout.js";

/**
 * The statechart as inline SVG: states the run entered are coloured and carry their visit count,
 * transitions it took are solid and carry theirs; the rest stays grey. Every state is a
 * `[data-state][data-visits]` group and every transition (arrow or line) a
 * `[data-transition][data-count]` group, for tests and for the page's own highlighting.
 */
export interface ChartCounts {
  visits: Record<string, number>;
  transitions: Record<string, number>;
}

function badge(x: number, y: number, text: string, cls: string): string {
  const w = Math.max(22, textWidth(text, 11) + 12);
  return `<g class="badge ${cls}"><rect x="${n(x - w)}" y="${n(y)}" width="${n(w)}" height="18" rx="9"/><text x="${n(x - w / 2)}" y="${n(y + 12.5)}" text-anchor="middle">${esc(text)}</text></g>`;
}

function lineRow(line: BoxLine, x: number, y: number, counts: ChartCounts): string {
  const count = counts.transitions[line.transition.id] ?? 0;
  const cls = count > 0 ? "taken" : "idle";
  const suffix = count > 0 ? ` ×${count}` : "";
  return (
    `<g class="box-line ${cls}" data-transition="${esc(line.transition.id)}" data-count="${count}"${line.target ? ` data-target="${esc(line.target)}"` : ""}>` +
    `<title>${esc(`${line.transition.label}${line.target ? ` → ${line.target}` : " (no state change)"}: taken ${count} time${count === 1 ? "" : "s"}`)}</title>` +
    `<text x="${n(x)}" y="${n(y)}">${esc(line.text)}<tspan class="count">${esc(suffix)}</tspan></text></g>`
  );
}

function stateGroup(box: StateBox, counts: ChartCounts): string {
  const visits = counts.visits[box.state.id] ?? 0;
  const final = box.state.type === "final";
  const outcome = final ? (/fail|error|abort|cancel/i.test(box.state.key) ? " final-bad" : " final-good") : "";
  const cls = `state ${box.compound ? "compound" : "atomic"}${visits > 0 ? " visited" : " idle"}${final ? " final" : ""}${outcome}`;
  const parts: string[] = [];
  parts.push(
    `<g class="${cls}" data-state="${esc(box.state.id)}" data-key="${esc(box.state.key)}" data-visits="${visits}" data-type="${esc(box.state.type)}">`,
    `<title>${esc(`${box.state.id}: entered ${visits} time${visits === 1 ? "" : "s"}`)}</title>`,
    `<rect class="frame" x="${n(box.x)}" y="${n(box.y)}" width="${n(box.w)}" height="${n(box.h)}" rx="${box.compound ? 12 : 9}"/>`,
  );
  if (final) parts.push(`<rect class="inner" x="${n(box.x + 3.5)}" y="${n(box.y + 3.5)}" width="${n(box.w - 7)}" height="${n(box.h - 7)}" rx="6.5"/>`);
  if (box.compound) {
    parts.push(`<text class="title" x="${n(box.x + 14)}" y="${n(box.y + 20)}">${esc(box.state.key)}</text>`);
    // Header items: transitions of the compound itself (from any state inside it).
    let hx = box.x + 14 + textWidth(box.state.key, LAYOUT.titleSize) + 22;
    if (box.lines.length > 0) {
      parts.push(`<text class="any" x="${n(hx)}" y="${n(box.y + 19.5)}">from any state:</text>`);
      hx += textWidth("from any state:", LAYOUT.lineSize) + 10;
      for (const line of box.lines) {
        parts.push(lineRow(line, hx, box.y + 19.5, counts));
        hx += textWidth(line.text, LAYOUT.lineSize) + 26;
      }
    }
    if (box.state.invokes.length > 0) {
      const text = `invokes ${box.state.invokes.map((i) => i.src).join(", ")}`;
      parts.push(`<text class="invoke" x="${n(box.x + box.w - 14 - (visits > 0 ? 40 : 0))}" y="${n(box.y + 19.5)}" text-anchor="end">${esc(text)}</text>`);
    }
  } else {
    parts.push(`<text class="title" x="${n(box.x + 12)}" y="${n(box.y + 23)}">${esc(box.state.key)}</text>`);
    let y = box.y + LAYOUT.atomicTitleH;
    if (box.state.invokes.length > 0) {
      parts.push(`<text class="invoke" x="${n(box.x + 12)}" y="${n(y - 3)}">${esc(`invokes ${box.state.invokes.map((i) => i.src).join(", ")}`)}</text>`);
      y += 14;
    }
    if (box.lines.length > 0) parts.push(`<line class="sep" x1="${n(box.x + 8)}" x2="${n(box.x + box.w - 8)}" y1="${n(y - 6)}" y2="${n(y - 6)}"/>`);
    for (const line of box.lines) {
      parts.push(lineRow(line, box.x + 12, y + 6, counts));
      y += LAYOUT.lineH;
    }
  }
  if (visits > 0 && box.depth > 0) parts.push(badge(box.x + box.w + 6, box.y - 9, `×${visits}`, "visits"));
  parts.push("</g>");
  return parts.join("");
}

function edgeGroup(edge: EdgeRoute, counts: ChartCounts): string {
  const count = counts.transitions[edge.transition.id] ?? 0;
  const taken = count > 0;
  const lines = labelLines(edge.transition.label);
  if (taken) lines[lines.length - 1] = `${lines[lines.length - 1]}  ×${count}`;
  const w = Math.max(...lines.map((l) => textWidth(l, LAYOUT.lineSize))) + 14;
  const h = lines.length * 14 + 5;
  const top = edge.label.y - h / 2;
  const kind = edge.transition.kind;
  const text = lines.map((l, i) => `<text x="${n(edge.label.x)}" y="${n(top + 13 + i * 14)}" text-anchor="middle">${esc(l)}</text>`).join("");
  return (
    `<g class="edge ${taken ? "taken" : "idle"} kind-${kind}" data-transition="${esc(edge.transition.id)}" data-source="${esc(edge.transition.source)}" data-target="${esc(edge.target)}" data-count="${count}">` +
    `<title>${esc(`${edge.transition.source} → ${edge.target} on ${edge.transition.label}: taken ${count} time${count === 1 ? "" : "s"}`)}</title>` +
    `<path d="${edge.d}" marker-end="url(#${taken ? "arrow-taken" : "arrow-idle"})"/>` +
    `<g class="edge-label"><rect x="${n(edge.label.x - w / 2)}" y="${n(top)}" width="${n(w)}" height="${n(h)}" rx="8"/>${text}</g></g>`
  );
}

export function renderChartSvg(layout: ChartLayout, counts: ChartCounts, title: string): string {
  const boxes = [...layout.boxes.values()];
  // Outer boxes first so nested ones paint over them; arrows above all boxes, labels last.
  const ordered = [...boxes].sort((a, b) => a.depth - b.depth);
  const initials = layout.initials
    .map((m) => `<g class="initial" data-initial-of="${esc(m.parent)}"><circle cx="${n(m.from.x)}" cy="${n(m.from.y)}" r="4.5"/><line x1="${n(m.from.x)}" y1="${n(m.from.y)}" x2="${n(m.to.x - (m.to.y === m.from.y ? 1 : 0))}" y2="${n(m.to.y - (m.to.y === m.from.y ? 0 : 1))}" marker-end="url(#arrow-initial)"/></g>`)
    .join("");
  const idle = layout.edges.filter((e) => !(counts.transitions[e.transition.id] ?? 0));
  const taken = layout.edges.filter((e) => (counts.transitions[e.transition.id] ?? 0) > 0);
  return [
    `<svg id="statechart" class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${n(layout.width)} ${n(layout.height + 8)}" width="${n(layout.width)}" height="${n(layout.height + 8)}" role="img" aria-label="${esc(title)}">`,
    `<defs>`,
    `<marker id="arrow-taken" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#2563eb"/></marker>`,
    `<marker id="arrow-idle" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" markerHeight="6" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#b8c1cf"/></marker>`,
    `<marker id="arrow-initial" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" markerHeight="6" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#475569"/></marker>`,
    `</defs>`,
    ordered.map((b) => stateGroup(b, counts)).join(""),
    initials,
    // Idle arrows underneath the taken ones, so the run's path is never hidden.
    idle.map((e) => edgeGroup(e, counts)).join(""),
    taken.map((e) => edgeGroup(e, counts)).join(""),
    `</svg>`,
  ].join("\n");
}
