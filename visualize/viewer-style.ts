/** The viewer's stylesheet and script, inlined into the page (it must work with no network). */
export const VIEWER_CSS = `
:root { --ink:#0f172a; --muted:#64748b; --faint:#94a3b8; --line:#e2e8f0; --bg:#f4f6fb; --card:#fff;
  --blue:#2563eb; --blue-soft:#e8f0fe; --green:#16a34a; --red:#dc2626; --amber:#d97706; --indigo:#6366f1; --teal:#0d9488; }
* { box-sizing: border-box; }
body { margin:0; background:var(--bg); color:var(--ink); font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans",sans-serif; }
main { max-width:1500px; margin:0 auto; padding:22px 24px 40px; }
header.top { display:flex; flex-wrap:wrap; align-items:baseline; gap:6px 16px; margin-bottom:14px; }
header.top .brand { width:100%; font-size:12px; letter-spacing:.08em; text-transform:uppercase; color:var(--muted); }
header.top h1 { margin:0; font-size:24px; display:flex; align-items:center; gap:12px; }
header.top .meta { color:var(--muted); font-size:12.5px; }
.status { font-size:13px; font-weight:600; padding:3px 11px; border-radius:999px; background:#e2e8f0; color:#334155; }
.status-succeeded, .status-done { background:#dcfce7; color:#166534; }
.status-failed, .status-error { background:#fee2e2; color:#991b1b; }
.cards { display:grid; grid-template-columns:repeat(auto-fit,minmax(150px,1fr)); gap:10px; margin-bottom:14px; }
.card { background:var(--card); border:1px solid var(--line); border-radius:12px; padding:10px 14px; }
.card .k { font-size:12px; color:var(--muted); }
.card .v { font-size:21px; font-weight:650; margin-top:1px; }
.card .s { font-size:12px; color:var(--muted); }
.answer { background:#f0fdf4; border:1px solid #bbf7d0; border-radius:12px; padding:10px 14px; margin-bottom:14px; white-space:pre-wrap; }
.answer.failed { background:#fef2f2; border-color:#fecaca; }
.answer b { display:block; font-size:12px; color:var(--muted); font-weight:600; margin-bottom:2px; }
.panel { background:var(--card); border:1px solid var(--line); border-radius:14px; padding:14px 16px 16px; margin-bottom:14px; }
.panel h2 { font-size:16px; margin:0 0 2px; }
.panel .hint { margin:0 0 10px; color:var(--muted); font-size:12.5px; }
.scroll { overflow-x:auto; }
svg.chart, svg.timeline { display:block; max-width:100%; height:auto; margin:0 auto; }
.legend { display:flex; flex-wrap:wrap; gap:6px 18px; font-size:12px; color:var(--muted); margin-top:8px; }
.legend span { display:inline-flex; align-items:center; gap:6px; }
.sw { display:inline-block; width:18px; height:12px; border-radius:4px; border:1.5px solid; }
.sw.on { background:var(--blue-soft); border-color:var(--blue); } .sw.off { background:#fff; border-color:#d5dbe3; }
.sw.edge-on { height:0; border-width:1.5px 0 0; border-color:var(--blue); border-radius:0; width:22px; }
.sw.edge-off { height:0; border-width:1.5px 0 0; border-style:dashed; border-color:#b8c1cf; border-radius:0; width:22px; }

svg text { font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans",sans-serif; }
.chart .state .frame { fill:#fff; stroke:#d5dbe3; stroke-width:1.3; }
.chart .state.compound .frame { fill:#f8fafc; }
.chart .state.compound.visited .frame { fill:#f7faff; stroke:#93b4ef; stroke-width:1.5; }
.chart .state.atomic.visited .frame { fill:var(--blue-soft); stroke:var(--blue); stroke-width:1.8; }
.chart .state .inner { fill:none; stroke:#d5dbe3; }
.chart .state.final-good.visited .frame { fill:#dcfce7; stroke:var(--green); } .chart .state.final-good.visited .inner { stroke:var(--green); }
.chart .state.final-bad.visited .frame { fill:#fee2e2; stroke:var(--red); } .chart .state.final-bad.visited .inner { stroke:var(--red); }
.chart .state .title { font-size:13.5px; font-weight:650; fill:#94a3b8; }
.chart .state.visited .title { fill:#1e293b; }
.chart .state.compound .title { fill:#64748b; }
.chart .state.compound.visited .title { fill:#1e3a8a; }
.chart .state .invoke { font-size:11px; fill:#94a3b8; font-style:italic; }
.chart .state .any { font-size:11px; fill:#94a3b8; }
.chart .state .sep { stroke:#e2e8f0; }
.chart .state.visited .sep { stroke:#c7d7f7; }
.chart .box-line text { font-size:11px; fill:#a3adbb; }
.chart .box-line.taken text { fill:#1d4ed8; font-weight:600; }
.chart .box-line .count { font-weight:700; }
.chart .badge rect { fill:var(--blue); } .chart .badge text { fill:#fff; font-size:11px; font-weight:700; }
.chart .final-good .badge rect { fill:var(--green); } .chart .final-bad .badge rect { fill:var(--red); }
.chart .edge path { fill:none; stroke:#b8c1cf; stroke-width:1.3; stroke-dasharray:4 3; }
.chart .edge.taken path { stroke:var(--blue); stroke-width:2.1; stroke-dasharray:none; }
.chart .edge.kind-always path { stroke-dasharray:2 3; }
.chart .edge.taken.kind-always path { stroke-dasharray:6 3; }
.chart .edge-label rect { fill:#fff; stroke:#e2e8f0; }
.chart .edge-label text { font-size:11px; fill:#94a3b8; }
.chart .edge.taken .edge-label rect { stroke:#bfdbfe; } .chart .edge.taken .edge-label text { fill:#1d4ed8; font-weight:600; }
.chart .initial circle { fill:#475569; } .chart .initial line { stroke:#475569; stroke-width:1.4; }
.chart .state.focus .frame { stroke:#f59e0b !important; stroke-width:3 !important; }
.chart .edge:hover path { stroke-width:3; } .chart .edge:hover .edge-label text { fill:var(--ink); }

.path { display:flex; flex-direction:column; gap:6px; }
.pass { display:flex; align-items:center; flex-wrap:wrap; gap:4px; }
.pass .n { width:88px; flex:none; font-size:12px; color:var(--muted); }
.step { font-size:12px; padding:2px 9px; border-radius:999px; background:var(--blue-soft); color:#1e3a8a; border:1px solid #c7d7f7; cursor:default; }
.step.eventless { background:#fff; border-style:dashed; color:#3b5bab; }
.step.final-good { background:#dcfce7; border-color:#86efac; color:#166534; }
.step.final-bad { background:#fee2e2; border-color:#fca5a5; color:#991b1b; }
.arrow { color:var(--faint); font-size:12px; }

.timeline .band.even { fill:#f8fafc; } .timeline .band.odd { fill:#eef2f8; }
.timeline .band-label { font-size:11px; fill:var(--muted); font-weight:600; }
.timeline .grid { stroke:#e5e9f0; stroke-width:1; }
.timeline .lane-sep { stroke:#e2e8f0; }
.timeline .lane-title { font-size:12.5px; font-weight:650; fill:#334155; }
.timeline .lane-count { font-size:11px; fill:var(--faint); }
.timeline .entry rect { stroke:rgba(15,23,42,.15); }
.timeline .kind-model rect { fill:var(--indigo); } .timeline .kind-tool rect { fill:var(--teal); } .timeline .kind-approval rect { fill:#f59e0b; }
.timeline .status-failed rect { fill:var(--red); } .timeline .status-retried rect { fill:#f87171; }
.timeline .status-rejected rect { fill:#9ca3af; } .timeline .status-unfinished rect { fill-opacity:.45; stroke-dasharray:3 2; }
.timeline .entry text { font-size:11.5px; }
.timeline .entry text.in { fill:#fff; font-weight:600; } .timeline .entry text.out { fill:#334155; }
.timeline .entry { cursor:pointer; } .timeline .entry:hover rect { stroke:#0f172a; stroke-width:1.5; }
.timeline .entry.focus rect { stroke:#f59e0b; stroke-width:2.5; }
.timeline .marker path { fill:var(--red); }
.timeline .marker-handoff path { fill:var(--indigo); }
.timeline .marker-guardrail path { fill:var(--amber); }
table.calls td .via { color:var(--indigo); font-size:11.5px; }
.timeline .axis line { stroke:#94a3b8; } .timeline .axis text { font-size:11px; fill:var(--muted); }

table.calls { width:100%; border-collapse:collapse; font-size:12.5px; margin-top:6px; }
table.calls th { text-align:left; color:var(--muted); font-weight:600; border-bottom:1px solid var(--line); padding:5px 8px; }
table.calls td { border-bottom:1px solid #f1f5f9; padding:5px 8px; vertical-align:top; }
table.calls td.num { text-align:right; font-variant-numeric:tabular-nums; white-space:nowrap; }
table.calls td.detail { color:var(--muted); font-family:ui-monospace,SFMono-Regular,Menlo,monospace; font-size:11.5px; white-space:pre-wrap; word-break:break-word; max-width:460px; }
table.calls tr.focus td { background:#fffbeb; }
.kind { font-size:11px; font-weight:700; padding:1px 8px; border-radius:999px; color:#fff; }
.kind.model { background:var(--indigo); } .kind.tool { background:var(--teal); } .kind.approval { background:#f59e0b; }
details > summary { cursor:pointer; color:var(--muted); font-size:12.5px; margin-top:8px; }

.messages { display:flex; flex-direction:column; gap:8px; }
.msg { border:1px solid var(--line); border-left:4px solid #cbd5e1; border-radius:10px; padding:8px 12px; background:#fff; }
.msg.user { border-left-color:var(--blue); } .msg.assistant { border-left-color:#8b5cf6; } .msg.tool { border-left-color:var(--teal); background:#fbfefd; }
.msg.system { border-left-color:#94a3b8; background:#fafafa; } .msg.error { border-left-color:var(--red); }
.msg .who { font-size:11.5px; font-weight:700; text-transform:uppercase; letter-spacing:.05em; color:var(--muted); margin-bottom:3px; }
.msg .who .id { text-transform:none; font-weight:400; letter-spacing:0; margin-left:6px; color:var(--faint); }
.msg .body { white-space:pre-wrap; word-break:break-word; }
.msg.tool .body { font-family:ui-monospace,SFMono-Regular,Menlo,monospace; font-size:12.5px; }
.msg .empty { color:var(--faint); font-style:italic; }
.msg .part { margin:6px 0 0; } .msg .part-image { display:block; max-width:100%; max-height:320px; border:1px solid var(--line); border-radius:6px; }
.msg figcaption, .msg .part-file { font-size:12px; color:var(--muted); }
.msg details.reasoning { margin:2px 0 6px; color:var(--muted); font-size:12.5px; } .msg details.reasoning summary { cursor:pointer; font-style:italic; }
.call { display:inline-block; margin:4px 6px 0 0; font-family:ui-monospace,SFMono-Regular,Menlo,monospace; font-size:12px; background:#f5f3ff; border:1px solid #ddd6fe; color:#5b21b6; border-radius:7px; padding:2px 8px; }
footer { color:var(--faint); font-size:12px; text-align:center; margin-top:18px; }
`;

/** Small interactions: a bar highlights its table row, a path step highlights its state in the chart. */
export const VIEWER_JS = `
(function () {
  function clear(cls) { document.querySelectorAll('.' + cls).forEach(function (el) { el.classList.remove(cls); }); }
  document.querySelectorAll('[data-timeline-entry]').forEach(function (bar) {
    bar.addEventListener('click', function () {
      clear('focus');
      bar.classList.add('focus');
      var row = document.querySelector('[data-entry-row="' + CSS.escape(bar.getAttribute('data-timeline-entry')) + '"]');
      if (row) { row.classList.add('focus'); var d = row.closest('details'); if (d) d.open = true; row.scrollIntoView({ block: 'nearest', behavior: 'smooth' }); }
    });
  });
  document.querySelectorAll('[data-step]').forEach(function (chip) {
    var state = document.querySelector('#statechart [data-state="' + CSS.escape(chip.getAttribute('data-step')) + '"]');
    if (!state) return;
    chip.addEventListener('mouseenter', function () { state.classList.add('focus'); });
    chip.addEventListener('mouseleave', function () { state.classList.remove('focus'); });
  });
})();
`;
