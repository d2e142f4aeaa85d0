import { mkdir, writeFile } from "node:fs/promises";
import { basename, dirname } from "node:path";
import { analyzeRecording } from "./analysis.js";
import { renderViewerPage, type ViewerPageOptions } from "./render-viewer.js";
import { defaultViewerPath } from "./viewer-path.js";

export interface WriteViewerResult {
  /** Where the HTML was written. */
  outPath: string;
  bytes: number;
  /** The run's status as the page shows it ("succeeded", "failed", ...). */
  status: string;
}

export { defaultViewerPath };

/** Build the self-contained HTML viewer of a recording as a string (no file written). */
export async function renderViewer(recordingPath: string): Promise<string> {
  const analysis = await analyzeRecording(recordingPath);
  return renderViewerPage(analysis, { source: basename(recordingPath) });
}

/**
 * `jianmu view run.jsonl`: read a recording (streamed), write ONE self-contained HTML file with
 * the statechart (visited states and taken transitions with counts), the path, a timeline of
 * model calls, tool calls and approvals, and the messages. Nothing in it loads from the network.
 * Rejects with a RecordingFormatError (file, line, problem) for a file that is not a recording.
 */
export async function writeViewer(recordingPath: string, outPath: string, page: Omit<ViewerPageOptions, "source"> = {}): Promise<WriteViewerResult> {
  const analysis = await analyzeRecording(recordingPath);
  const html = renderViewerPage(analysis, { source: basename(recordingPath), ...page });
  await mkdir(dirname(outPath), { recursive: true });
  await writeFile(outPath, html, "utf8");
  return { outPath, bytes: Buffer.byteLength(html), status: analysis.summary.status };
}
