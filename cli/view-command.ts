import { resolve } from "node:path";
import { RecordingFormatError } from "../visualize/recording-reader.js";
import { defaultViewerPath, writeViewer } from "../visualize/viewer.js";
import { UsageError, type ViewArgs } from "./args.js";
import { checkWritableFile } from "./preflight.js";
import type { Terminal } from "./progress.js";

/** `jianmu view run.jsonl [--out run.html]`: one self-contained HTML file, nothing fetched at view time. */
export async function viewCommand(args: ViewArgs, ctx: Terminal & { cwd: string }): Promise<number> {
  const recording = resolve(ctx.cwd, args.recording);
  const out = checkWritableFile("--out", ctx.cwd, args.out ?? defaultViewerPath(args.recording), "run.html");
  try {
    const result = await writeViewer(recording, out);
    ctx.out.write(`wrote ${result.outPath} (${result.bytes} bytes, run ${result.status}); open it in a browser\n`);
    return 0;
  } catch (error) {
    if (error instanceof RecordingFormatError) throw new UsageError(`cannot read the recording: ${error.message.split("\n")[0]}`);
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") throw new UsageError(`cannot read the recording: no such file ${recording} (make one with: jianmu run --record ${args.recording})`);
    if (code === "EISDIR") throw new UsageError(`cannot read the recording: ${recording} is a folder; give the .jsonl file made by jianmu run --record`);
    if (code !== undefined) throw new UsageError(`cannot read the recording or write ${out} (${code}); check both paths`);
    throw error;
  }
}
