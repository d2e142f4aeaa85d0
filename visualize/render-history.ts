import type { Message } from "../actors/messages.js";
import type { CheckpointEntry, RunBranch } from "../machines/persistence/log/log-store.js";
import { clip, esc } from "./html.js";

/**
 * The history panel of a stored run's viewer (`jianmu view --store`): the run's fork tree, every
 * checkpoint of every branch (the one shown marked, each with the command that opens it), and for
 * each fork how its conversation differs from the branch it was forked from.
 */
export interface HistoryView {
  /** The checkpoint the page shows. */
  shown: { runId: string; checkpointId: string };
  /** The fork tree, root first (`store.lineage`), each branch with its history and its latest conversation. */
  branches: (RunBranch & { history: CheckpointEntry[]; messages: Message[] })[];
  /** The command line that opens a checkpoint in this viewer. */
  open: (runId: string, checkpointId: string) => string;
}

const STYLE = `<style>
#history-panel ul.branches{list-style:none;padding-left:0;margin:0}
#history-panel ul.branches ul.branches{padding-left:22px;border-left:2px solid #d0d7de;margin-left:6px}
#history-panel .branch-head{font-weight:600;margin:10px 0 4px}
#history-panel tr.shown td{background:#fff8c5}
#history-panel .diff{display:grid;grid-template-columns:1fr 1fr;gap:10px;margin:6px 0 14px}
#history-panel .diff .side{border:1px solid #d0d7de;border-radius:6px;padding:6px 8px}
#history-panel .diff .msg-line{font-size:12px;margin:3px 0;white-space:pre-wrap}
</style>`;

function messageLine(message: Message): string {
  const calls = message.role === "assistant" && message.toolCalls?.length ? ` → ${message.toolCalls.map((c) => `${c.name}(${clip(c.arguments, 80)})`).join(", ")}` : "";
  const text = typeof message.content === "string" ? clip(message.content, 300) : "";
  return `<div class="msg-line" data-role="${esc(message.role)}"><b>${esc(message.role)}</b> ${esc(text)}${esc(calls)}</div>`;
}

/** How two conversations differ: how many messages they share from the start, then each one's rest. */
export function conversationDiff(left: readonly Message[], right: readonly Message[]): { shared: number; left: Message[]; right: Message[] } {
  let shared = 0;
  while (shared < left.length && shared < right.length && JSON.stringify(left[shared]) === JSON.stringify(right[shared])) shared++;
  return { shared, left: left.slice(shared), right: right.slice(shared) };
}

function diffOf(parent: HistoryView["branches"][number], child: HistoryView["branches"][number]): string {
  const diff = conversationDiff(parent.messages, child.messages);
  const side = (runId: string, rest: Message[]) =>
    `<div class="side" data-side="${esc(runId)}"><div class="hint">run ${esc(runId)}: ${rest.length} more</div>${rest.map(messageLine).join("") || `<div class="hint">(nothing more)</div>`}</div>`;
  return (
    `<div class="branch-diff" data-diff="${esc(parent.runId)}..${esc(child.runId)}" data-shared="${diff.shared}">` +
    `<p class="hint">Conversations of ${esc(parent.runId)} and ${esc(child.runId)}: ${diff.shared} message${diff.shared === 1 ? "" : "s"} in common, then:</p>` +
    `<div class="diff">${side(parent.runId, diff.left)}${side(child.runId, diff.right)}</div></div>`
  );
}

function historyTable(view: HistoryView, branch: HistoryView["branches"][number]): string {
  const rows = branch.history.map((entry, i) => {
    const shown = entry.runId === view.shown.runId && entry.checkpointId === view.shown.checkpointId;
    const at = new Date(entry.at).toISOString().replace("T", " ").replace(/\.\d+Z$/, "");
    return (
      `<tr data-checkpoint="${esc(entry.checkpointId)}"${shown ? ` class="shown"` : ""}><td class="num">${i + 1}</td><td>${esc(entry.checkpointId)}</td><td>${esc(entry.state)}</td>` +
      `<td class="num">${entry.iteration}</td><td>${esc(entry.status)}</td><td>${esc(at)}</td><td><code>${esc(view.open(entry.runId, entry.checkpointId))}</code></td></tr>`
    );
  });
  return (
    `<table class="calls history"><thead><tr><th>#</th><th>Checkpoint</th><th>State</th><th>Iter.</th><th>Status</th><th>Saved</th><th>Open it</th></tr></thead>` +
    `<tbody>${rows.join("")}</tbody></table>`
  );
}

export function renderHistorySection(view: HistoryView): string {
  const byRun = new Map(view.branches.map((b) => [b.runId, b]));
  const children = (runId: string) => view.branches.filter((b) => b.forkedFrom?.runId === runId);
  const branch = (b: HistoryView["branches"][number]): string => {
    const parent = b.forkedFrom ? byRun.get(b.forkedFrom.runId) : undefined;
    const head = b.forkedFrom ? `run ${b.runId}, forked from run ${b.forkedFrom.runId} at checkpoint ${b.forkedFrom.checkpointId}` : `run ${b.runId}`;
    const forks = children(b.runId);
    return (
      `<li data-branch="${esc(b.runId)}"><div class="branch-head">${esc(head)} · ${b.history.length} checkpoint${b.history.length === 1 ? "" : "s"}</div>` +
      (parent ? diffOf(parent, b) : "") +
      historyTable(view, b) +
      (forks.length > 0 ? `<ul class="branches">${forks.map(branch).join("")}</ul>` : "") +
      `</li>`
    );
  };
  const roots = view.branches.filter((b) => !b.forkedFrom || !byRun.has(b.forkedFrom.runId));
  return `<section class="panel" id="history-panel">
${STYLE}
<h2>History and branches</h2>
<p class="hint">Every checkpoint the store keeps, oldest first, for this run and the runs forked from it (a fork starts from a checkpoint of the run above it). The highlighted one is on this page; open any other with the command on its row. Under each fork: how its conversation differs from the run it was forked from.</p>
<ul class="branches">${roots.map(branch).join("")}</ul>
</section>`;
}
