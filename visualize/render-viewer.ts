import { formatCost } from "../actors/pricing.js";
import type { Message, RunAnalysis, ViewerPart } from "./analysis.js";
import { base64Bytes, formatBytes } from "../tools/byte-size.js";
import { inlineData } from "../actors/content-parts.js";
import { allStates } from "./chart.js";
import { clip, esc, formatCount, formatMs } from "./html.js";
import { layoutChart } from "./layout.js";
import { renderChartSvg } from "./render-chart.js";
import { entryLabel, renderTimelineSvg } from "./render-timeline.js";
import { VIEWER_CSS, VIEWER_JS } from "./viewer-style.js";
import type { StoredApprovals } from "./stored-approvals.js";

/**
 * The whole viewer page as one HTML string: inline CSS, inline SVG, a few lines of inline script,
 * and a Content-Security-Policy that forbids every network request, so opening it offline shows
 * exactly what a connected browser would.
 */
export interface ViewerPageOptions {
  /** Shown in the footer (e.g. the recording's file name). */
  source?: string;
  /** More panels, as HTML, after the messages (a stored run's history: render-history.ts). */
  sections?: string;
  /** A stored run's approvals, read from its checkpoints (stored-approvals.ts): it has no telemetry to count them from. */
  storedApprovals?: StoredApprovals;
}

const CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:";

function card(key: string, value: string, sub: string, attrs = ""): string {
  return `<div class="card"${attrs}><div class="k">${esc(key)}</div><div class="v">${esc(value)}</div><div class="s">${esc(sub)}</div></div>`;
}

/** "P in · C out", with the cached and reasoning shares when the server reported them. */
function tokenDetail(usage: RunAnalysis["summary"]["usage"]): string {
  const cached = usage.cachedPromptTokens !== undefined ? ` (${formatCount(usage.cachedPromptTokens)} cached)` : "";
  const reasoning = usage.reasoningTokens !== undefined ? ` (${formatCount(usage.reasoningTokens)} reasoning)` : "";
  return `${formatCount(usage.promptTokens)} in${cached} · ${formatCount(usage.completionTokens)} out${reasoning}`;
}

/** The approvals card of a run without telemetry: from its checkpoints when they were read, else unknown. */
function storedApprovalsCard(stored: StoredApprovals | undefined, unknown: (key: string, label: string) => string): string {
  if (!stored) return unknown("approvals", "Approvals");
  const sub = stored.asked > 0 ? `${stored.approved} approved · ${stored.asked - stored.approved} not (from its checkpoints)` : "none asked (from its checkpoints)";
  return card("Approvals", String(stored.asked), sub, ` data-summary="approvals" data-value="${stored.asked}"`);
}

function summaryCards(a: RunAnalysis, stored: StoredApprovals | undefined): string {
  const s = a.summary;
  const approvals = a.timeline.filter((e) => e.kind === "approval");
  const approved = approvals.filter((e) => e.status === "approved").length;
  const failedTools = a.timeline.filter((e) => e.kind === "tool" && e.status === "failed").length;
  // Without telemetry (a stored run, from its checkpoint) these figures are unknown, not zero.
  const unknown = (key: string, label: string) => card(label, "—", "not kept in a checkpoint", ` data-summary="${key}" data-value="unknown"`);
  return [
    `<section id="summary" class="cards" data-run-status="${esc(s.status)}">`,
    s.telemetry ? card("Duration", formatMs(s.durationMs), `${a.steps.length} state entries`, ` data-summary="duration" data-value="${Math.round(s.durationMs)}"`) : unknown("duration", "Duration"),
    card("Iterations", String(s.iterations), `${s.rounds} model round${s.rounds === 1 ? "" : "s"}`, ` data-summary="iterations" data-value="${s.iterations}"`),
    s.telemetry
      ? card("Model calls", String(s.modelCalls), a.timeline.some((e) => e.kind === "model" && e.status !== "ok") ? "some failed or retried" : "all answered", ` data-summary="model-calls" data-value="${s.modelCalls}"`)
      : unknown("model-calls", "Model calls"),
    card("Tokens", formatCount(s.usage.totalTokens), tokenDetail(s.usage), ` data-summary="tokens" data-value="${s.usage.totalTokens}"`),
    // Only with config.pricing: the cost, or that it is not known.
    ...(s.usage.cost !== undefined
      ? [card("Cost", s.usage.cost === null ? "unknown" : formatCost(s.usage.cost), s.usage.cost === null ? "a model had no price" : "in the pricing's units", ` data-summary="cost" data-value="${s.usage.cost ?? ""}"`)]
      : []),
    card("Tool calls", String(s.toolCalls), failedTools > 0 ? `${failedTools} failed` : s.telemetry ? "none failed" : "from the messages", ` data-summary="tool-calls" data-value="${s.toolCalls}"`),
    s.telemetry
      ? card("Approvals", String(s.approvals), s.approvals > 0 ? `${approved} approved · ${s.approvals - approved} not` : "none asked", ` data-summary="approvals" data-value="${s.approvals}"`)
      : storedApprovalsCard(stored, unknown),
    `</section>`,
    s.telemetry
      ? ""
      : `<p class="hint" id="no-telemetry">This run was read from its checkpoints, which keep its state and messages but no telemetry: its timings${stored ? " and model calls are" : ", model calls and approvals are"} unknown, and the chart and path show where it stood, not the way it went. Record a run (<code>jianmu run --record run.jsonl</code>, or <code>recordRun</code>) to see all of it.</p>`,
  ].join("");
}

function pathSection(a: RunAnalysis): string {
  const states = new Map(allStates(a.chart).map((s) => [s.id, s]));
  // A new pass starts each time the run comes back to the state where its first loop began.
  const passes: RunAnalysis["steps"][] = [[]];
  let loopStart: string | undefined;
  const seen = new Set<string>();
  for (const step of a.steps) {
    if (loopStart === undefined && seen.has(step.state)) loopStart = step.state;
    if (step.state === loopStart && passes[passes.length - 1]!.length > 0 && passes[passes.length - 1]!.some((s) => s.state === loopStart)) passes.push([]);
    seen.add(step.state);
    passes[passes.length - 1]!.push(step);
  }
  const rows = passes
    .filter((p) => p.length > 0)
    .map((pass, i) => {
      const chips = pass.map((step, j) => {
        const state = states.get(step.state);
        const next = pass[j + 1] ?? a.steps[a.steps.indexOf(step) + 1];
        const eventless = next !== undefined && next.via === "always" && next.macro === step.macro;
        const final = state?.type === "final" ? (/fail|error|abort|cancel/i.test(state.key) ? " final-bad" : " final-good") : "";
        const tip = `${step.state}\nentered at ${formatMs(step.t)} on ${step.via}${eventless ? "\neventless: left at once by an always transition" : ""}`;
        const chip = `<span class="step${eventless ? " eventless" : ""}${final}" data-step="${esc(step.state)}" title="${esc(tip)}">${esc(state?.key ?? step.state)}</span>`;
        return j === 0 ? chip : `<span class="arrow" title="${esc(step.via)}">→</span>${chip}`;
      });
      return `<div class="pass" data-pass="${i + 1}"><span class="n">${i === 0 ? "start · pass 1" : `pass ${i + 1}`}</span>${chips.join("")}</div>`;
    });
  return `<div class="path">${rows.join("")}</div>`;
}

function callsTable(a: RunAnalysis): string {
  const rows = a.timeline.map((e, i) => {
    const cost = e.tokens?.cost === undefined ? "" : ` · ${e.tokens.cost === null ? "cost unknown" : formatCost(e.tokens.cost)}`;
    const tokens = e.tokens ? `${formatCount(e.tokens.promptTokens)} / ${formatCount(e.tokens.completionTokens)}${cost}` : "";
    return (
      `<tr data-entry-row="${esc(e.id)}" data-kind="${e.kind}"><td class="num">${i + 1}</td><td><span class="kind ${e.kind}">${e.kind}</span></td>` +
      `<td${e.agent ? ` data-agent="${esc(e.agent)}"` : ""}>${e.agent ? `<span class="via">${esc(e.agent)} ›</span> ` : ""}${esc(e.name)}</td><td class="num">${e.iteration + 1}</td><td class="num">${formatMs(e.start)}</td><td class="num">${formatMs(e.durationMs)}</td>` +
      `<td class="num">${tokens}</td><td>${esc(e.status)}</td><td class="detail" title="${esc(entryLabel(e))}">${esc(clip(e.detail ?? "", 220))}</td></tr>`
    );
  });
  return (
    `<details open><summary>${a.timeline.length} calls</summary><table class="calls"><thead><tr><th>#</th><th>Kind</th><th>Name</th><th>Iter.</th><th>Start</th><th>Duration</th><th>Tokens in / out</th><th>Status</th><th>Detail</th></tr></thead>` +
    `<tbody>${rows.join("")}</tbody></table></details>`
  );
}

/** Agents that ran nested in this one: what their telemetry says, and the child actors that ran them. */
function nestedSection(a: RunAnalysis): string {
  if (a.nestedAgents.length === 0 && a.nestedActors.length === 0) return "";
  const rows = a.nestedAgents.map((n) => {
    const tokens = n.usage ? formatCount(n.usage.totalTokens) : "";
    const status = n.reason ? `${n.status} · ${n.reason}` : n.status;
    return `<tr data-nested-agent="${esc(JSON.stringify(n.path))}"><td>${esc(n.label)}</td><td>${esc(status)}</td><td class="num">${n.modelCalls}</td><td class="num">${n.toolCalls}</td><td class="num">${tokens}</td></tr>`;
  });
  const actors = a.nestedActors.map((n) => `<code data-nested-actor="${esc(n.id)}" title="${esc(`logic ${n.src}, child of ${n.parent}`)}">${esc(n.id)}</code>`).join(" ");
  return `<section class="panel" id="nested-panel">
<h2>Nested agents</h2>
<p class="hint">Agents this one called as tools or handed the conversation to. Each ran as a child actor of its caller (persisted inside its snapshot); its calls appear in the timeline under its name, its tokens count in the caller's.</p>
<table class="calls"><thead><tr><th>Agent (the call that started it)</th><th>Status</th><th>Model calls</th><th>Tool calls</th><th>Tokens</th></tr></thead><tbody>${rows.join("")}</tbody></table>
${actors ? `<p class="hint">Child actors: ${actors}</p>` : ""}
</section>`;
}

function messageBody(text: string | null): string {
  if (text === null || text === "") return `<div class="body empty">(no text)</div>`;
  if (text.length <= 1600) return `<div class="body">${esc(text)}</div>`;
  return `<div class="body">${esc(text.slice(0, 1200))}…</div><details><summary>show all ${formatCount(text.length)} characters</summary><div class="body">${esc(text)}</div></details>`;
}

/** A base64 image the page can show (the CSP allows data: images only); the type is checked, the data is base64 text. */
const SHOWN_IMAGE_TYPE = /^image\/(png|jpeg|gif|webp)$/i;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

function partBody(part: ViewerPart): string {
  if (part.type === "text") return messageBody(part.text);
  const bytes = inlineData(part);
  const inline = bytes?.data;
  const mediaType = bytes?.mediaType ?? part.mediaType;
  const size = inline !== undefined ? formatBytes(base64Bytes(inline)) : undefined;
  const label = [part.filename, mediaType, size].filter((piece) => piece !== undefined).join(", ");
  if (part.type === "image" && inline !== undefined && mediaType !== undefined && SHOWN_IMAGE_TYPE.test(mediaType) && BASE64.test(inline)) {
    return `<figure class="part"><img class="part-image" data-part-image src="data:${esc(mediaType.toLowerCase())};base64,${inline}" alt="${esc(label)}"><figcaption>${esc(label)}</figcaption></figure>`;
  }
  // By URL: named, not fetched (the page makes no network requests); a stored blob: named by its hash.
  const where = part.url !== undefined && inline === undefined ? ` at ${esc(clip(part.url, 200))}` : part.blob !== undefined ? ` (stored as ${esc(part.blob.slice(0, 19))}…)` : "";
  return `<div class="part part-file" data-part="${esc(part.type)}">${part.type === "image" ? "image" : "file"}${label ? ` · ${esc(label)}` : ""}${where}</div>`;
}

function contentBody(m: Message): string {
  return m.parts ? m.parts.map(partBody).join("") : messageBody(m.content);
}

function messagesSection(messages: Message[]): string {
  if (messages.length === 0) return `<p class="hint">The recording holds no messages.</p>`;
  const items = messages.map((m, i) => {
    const calls = (m.toolCalls ?? []).map((c) => `<span class="call" data-tool-call="${esc(c.id)}" title="${esc(c.id)}">${esc(c.name)}(${esc(clip(c.arguments, 160))})</span>`).join("");
    const who =
      m.role === "tool"
        ? `tool · ${esc(m.name ?? "")}<span class="id">${esc(m.toolCallId ?? "")}${m.isError ? " · error" : ""}</span>`
        : esc(m.role);
    const reasoning = m.reasoning ? `<details class="reasoning" data-reasoning><summary>reasoning</summary><div class="body">${esc(m.reasoning)}</div></details>` : "";
    return `<div class="msg ${esc(m.role)}${m.isError ? " error" : ""}" data-message="${i}" data-role="${esc(m.role)}"><div class="who">${who}</div>${reasoning}${m.role === "assistant" && !m.content && calls ? "" : contentBody(m)}${calls ? `<div>${calls}</div>` : ""}</div>`;
  });
  return `<div class="messages">${items.join("")}</div>`;
}

export function renderViewerPage(a: RunAnalysis, options: ViewerPageOptions = {}): string {
  const s = a.summary;
  const layout = layoutChart(a.chart);
  const chartSvg = renderChartSvg(layout, { visits: a.visits, transitions: a.transitions }, `Statechart of ${a.chart.machineId}`);
  const started = new Date(a.header.startedAt).toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC");
  const answer =
    s.finalAnswer !== undefined
      ? `<div class="answer" id="final-answer"><b>Final answer</b>${esc(s.finalAnswer)}</div>`
      : s.status === "failed"
        ? `<div class="answer failed" id="final-answer"><b>Run failed</b>${esc(s.reason ?? "no reason recorded")}</div>`
        : "";
  const statusText = s.reason ? `${s.status} · ${s.reason}` : s.status;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="jianmu run viewer">
<title>${esc(`${s.agent} run · ${statusText}`)}</title>
<style>${VIEWER_CSS}</style>
</head>
<body>
<main>
<header class="top">
<div class="brand">jianmu · run viewer</div>
<h1>${esc(s.agent)} <span class="status status-${esc(s.status)}" id="run-status" data-status="${esc(s.status)}"${s.reason ? ` data-reason="${esc(s.reason)}"` : ""}>${esc(statusText)}</span></h1>
<div class="meta">${s.runId ? `run ${esc(s.runId)} · ` : ""}started ${esc(started)} · machine ${esc(a.chart.machineId)}</div>
</header>
${summaryCards(a, options.storedApprovals)}
${answer}
<section class="panel" id="chart-panel">
<h2>Statechart</h2>
<p class="hint">Coloured states were entered by this run; the badge says how many times (eventless steps such as checks and retries count too). Solid blue arrows and blue lines are transitions it took, with how often. Lines inside a box are transitions handled there (↻ without leaving the state) or jumps written in place of a long arrow.</p>
<div class="scroll">${chartSvg}</div>
<div class="legend"><span><i class="sw on"></i>entered</span><span><i class="sw off"></i>not entered</span><span><i class="sw edge-on"></i>transition taken</span><span><i class="sw edge-off"></i>not taken</span><span>dotted: eventless (<code>always</code>)</span></div>
</section>
<section class="panel" id="path-panel">
<h2>Path</h2>
<p class="hint">The states the run entered, in order, one row per pass through the loop. Dashed steps were left at once by an eventless transition.</p>
${pathSection(a)}
</section>
<section class="panel" id="timeline-panel">
<h2>Timeline</h2>
<p class="hint">Model calls, tool calls and approvals on one time axis; shaded bands are the loop's iterations. Click a bar for its row below.</p>
<div class="scroll">${renderTimelineSvg(a)}</div>
${callsTable(a)}
</section>
${nestedSection(a)}
<section class="panel" id="messages-panel">
<h2>Messages</h2>
<p class="hint">The conversation as the agent's state holds it at the end of the run${a.header.redaction.omitText ? " (recorded without text: only lengths were kept)" : ""}.</p>
${messagesSection(a.messages)}
</section>
${options.sections ?? ""}
<footer>Generated by jianmu${options.source ? ` from ${esc(options.source)}` : ""} · recording format ${esc(a.header.format)} v${a.header.version} · this page loads nothing from the network</footer>
</main>
<script>${VIEWER_JS}</script>
</body>
</html>
`;
}
