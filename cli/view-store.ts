import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Guard } from "../actors/guard.js";
import { ModelError, type ModelClient } from "../actors/model-client.js";
import { createReactMachine } from "../machines/react-machine.js";
import { RunQueueError } from "../queue/errors.js";
import type { RunStore } from "../queue/run-store.js";
import { describeMachine } from "../visualize/chart.js";
import { toPlain } from "../visualize/plain.js";
import { RECORDING_FORMAT, RECORDING_VERSION, type RecordLine, type RecordingHeader } from "../visualize/recording-format.js";
import { writeViewer } from "../visualize/viewer.js";
import { loadCheckpoint } from "../machines/persistence/checkpoints/load-checkpoint.js";

/** The chart only: a stored run is shown, never continued, so no model is ever called. */
const noModel: ModelClient = {
  description: "none (viewing a stored run)",
  complete: () => Promise.reject(new ModelError("a stored run is only viewed", { kind: "aborted" })),
};

/** Never consulted (the machine is only drawn); its presence puts the guard's states in the chart. */
const viewOnlyGuard: Guard = () => ({ decision: "allow" });

/**
 * `jianmu view --store <s> <runId>`: the run viewer of a stored run, from its last checkpoint (state,
 * messages, output). A stored run keeps no telemetry, so the timeline holds that one moment; record a
 * run (`jianmu run --record`) for the whole path.
 */
export async function viewStoredRun(store: RunStore, runId: string, outPath: string | undefined, cwd: string): Promise<{ outPath: string; bytes: number; status: string }> {
  const record = await loadCheckpoint(store, runId);
  if (!record) throw new RunQueueError("unknown_run", `view: run ${runId} has no checkpoint in this store yet (see jianmu runs --store ...)`);
  // The stored run's own options are not known here: draw the chart of an agent with constraints,
  // which has every state a parked run can be in (AwaitingApproval exists only where a guard can hold a call).
  const machine = createReactMachine({ name: record.machine, modelClient: noModel, configFile: false, constraints: [viewOnlyGuard] });
  const root = `${runId}:0`;
  const startedAt = record.savedAt;
  const header: RecordingHeader = {
    k: "header",
    format: RECORDING_FORMAT,
    version: RECORDING_VERSION,
    machineId: machine.id,
    chart: describeMachine(machine),
    definition: JSON.stringify(toPlain(machine.config, { functions: "name", maxDepth: 40 })),
    startedAt,
    redaction: { omitText: false, maxTextChars: null },
  };
  const snapshot = record.snapshot as { status: string; value: unknown; context: unknown; output?: unknown };
  const lines: RecordLine[] = [
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
    { k: "end", seq: 2, t: 0, endedAt: startedAt, lines: 3, dropped: 0 },
  ];
  const dir = mkdtempSync(join(tmpdir(), "jianmu-view-"));
  try {
    const recording = join(dir, `${runId}.jsonl`);
    writeFileSync(recording, [header, ...lines].map((line) => JSON.stringify(line)).join("\n") + "\n");
    return await writeViewer(recording, resolve(cwd, outPath ?? `${runId}.html`));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
