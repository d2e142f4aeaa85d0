import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Guard } from "../actors/guard.js";
import { ModelError, type ModelClient } from "../actors/model-client.js";
import { agentTool } from "../machines/composition/agent-tool.js";
import { handoff } from "../machines/composition/handoff.js";
import { createReactMachine } from "../machines/react-machine.js";
import { RunQueueError } from "../queue/errors.js";
import type { RunStore } from "../queue/run-store.js";
import { describeMachine } from "../visualize/chart.js";
import { toPlain } from "../visualize/plain.js";
import { RECORDING_FORMAT, RECORDING_VERSION, type RecordLine, type RecordingHeader } from "../visualize/recording-format.js";
import { writeViewer } from "../visualize/viewer.js";
import { renderHistorySection } from "../visualize/render-history.js";
import { conversationsIn } from "../machines/persistence/log/conversation.js";
import type { PersistedAgent } from "../machines/persistence/persistence.js";
import { loadCheckpoint } from "../machines/persistence/checkpoints/load-checkpoint.js";
import type { CheckpointEntry } from "../machines/persistence/log/log-store.js";
import { approvalCheckpoints, approvalsIn, type StoredApprovals } from "../visualize/stored-approvals.js";

/** The chart only: a stored run is shown, never continued, so no model is ever called. */
const noModel: ModelClient = {
  description: "none (viewing a stored run)",
  complete: () => Promise.reject(new ModelError("a stored run is only viewed", { kind: "aborted" })),
};

/** Never consulted (the machine is only drawn); its presence puts the guard's states in the chart. */
const viewOnlyGuard: Guard = () => ({ decision: "allow" });

/** Where the run to view is and which checkpoint of it to show. */
export interface StoredRunView {
  runId: string;
  /** A checkpoint id from the run's history (default: its latest). */
  checkpointId?: string;
  /** The --store (and --schema) arguments, for the commands that open the other checkpoints. */
  storeArgs: string;
  outPath: string | undefined;
  cwd: string;
}

/**
 * `jianmu view --store <s> <runId> [--checkpoint <id>]`: the run viewer of a stored run at one of its
 * checkpoints (state, messages, output), with the run's history and branches: every checkpoint of
 * the run and of the runs forked from it, and how each fork's conversation differs from its
 * original. A stored run keeps no telemetry, so the timeline holds that one moment; record a run
 * (`jianmu run --record`) for the whole path.
 */
export async function viewStoredRun(store: RunStore, view: StoredRunView): Promise<{ outPath: string; bytes: number; status: string }> {
  const { runId, checkpointId, outPath, cwd } = view;
  // Large images and files the store keeps apart are put back (machines/persistence/blobs.ts).
  const record = await loadCheckpoint(store, runId, checkpointId);
  if (!record) {
    // A wrong --checkpoint is bad input, told as such (the command line says "no run" only of an unknown run).
    throw checkpointId === undefined
      ? new RunQueueError("unknown_run", `view: run ${runId} has no checkpoint in this store yet (see jianmu runs --store ...)`)
      : new RunQueueError("invalid_input", `view: run ${runId} has no checkpoint ${checkpointId}; this page without --checkpoint lists them`);
  }
  const history = await store.history(runId);
  const shown = { runId, checkpointId: checkpointId ?? history.at(-1)?.checkpointId ?? "" };
  const branches = await Promise.all(
    (await store.lineage(runId)).map(async (branch) => {
      const latest = await store.load(branch.runId);
      return { ...branch, history: await store.history(branch.runId), messages: latest ? (conversationsIn(latest.snapshot)[0] ?? []) : [] };
    }),
  );
  const sections = renderHistorySection({ shown, branches, open: (run, checkpoint) => `jianmu view ${view.storeArgs} ${run} --checkpoint ${checkpoint}` });
  const machine = viewedMachine(record);
  const storedApprovals = await approvalsUpTo(store, machine, runId, history, { checkpointId: shown.checkpointId, snapshot: record.snapshot });
  const dir = mkdtempSync(join(tmpdir(), "jianmu-view-"));
  try {
    const recording = join(dir, `${runId}.jsonl`);
    writeFileSync(recording, recordingOf(record, machine).map((line) => JSON.stringify(line)).join("\n") + "\n");
    return await writeViewer(recording, resolve(cwd, outPath ?? `${runId}.html`), { sections, storedApprovals });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The chart a stored run is drawn with. Its own options are not known here: an agent with
 * constraints, a nested agent and a handoff has every state a parked run can be in (AwaitingApproval
 * exists only where a guard can hold a call; Delegating and HandingOff hold a nested agent's wait).
 */
function viewedMachine(record: PersistedAgent) {
  // Never run (the machine is only drawn); its presence puts the nested agents' states in the chart.
  const viewOnlyNested = createReactMachine({ name: "nested", modelClient: noModel, configFile: false });
  return createReactMachine({
    name: record.machine,
    modelClient: noModel,
    configFile: false,
    constraints: [viewOnlyGuard],
    tools: [agentTool(viewOnlyNested, { name: "nested_agent", description: "A nested agent (drawn only)" }), handoff(viewOnlyNested, { name: "hand_off" })],
  });
}

/** The run's approvals up to the checkpoint shown (already loaded), from the checkpoints that say how they went. */
async function approvalsUpTo(store: RunStore, machine: { root: unknown }, runId: string, history: readonly CheckpointEntry[], shown: { checkpointId: string; snapshot: unknown }): Promise<StoredApprovals> {
  const shownAt = history.findIndex((entry) => entry.checkpointId === shown.checkpointId);
  const ids = approvalCheckpoints(machine, shownAt < 0 ? history : history.slice(0, shownAt + 1));
  const snapshots = await Promise.all(ids.map(async (id) => (id === shown.checkpointId ? shown.snapshot : (await loadCheckpoint(store, runId, id))?.snapshot)));
  return approvalsIn(snapshots);
}

/** The stored checkpoint as a recording of one moment, for the viewer. */
function recordingOf(record: PersistedAgent, machine: ReturnType<typeof viewedMachine>): (RecordingHeader | RecordLine)[] {
  const root = `${record.runId}:0`;
  const header: RecordingHeader = {
    k: "header",
    format: RECORDING_FORMAT,
    version: RECORDING_VERSION,
    machineId: machine.id,
    chart: describeMachine(machine),
    definition: JSON.stringify(toPlain(machine.config, { functions: "name", maxDepth: 40 })),
    startedAt: record.savedAt,
    redaction: { omitText: false, maxTextChars: null },
  };
  const snapshot = record.snapshot as { status: string; value: unknown; context: unknown; output?: unknown };
  return [
    header,
    { k: "actor", seq: 0, t: 0, actor: root, id: root, root, src: machine.id, machine: true },
    {
      k: "snapshot",
      seq: 1,
      t: 0,
      actor: root,
      root,
      eventType: "jianmu.checkpoint",
      status: snapshot.status,
      value: snapshot.value,
      context: [{ op: "set", path: [], value: snapshot.context }],
      ...(snapshot.output !== undefined ? { output: snapshot.output } : {}),
    },
    { k: "end", seq: 2, t: 0, endedAt: record.savedAt, lines: 3, dropped: 0 },
  ];
}
