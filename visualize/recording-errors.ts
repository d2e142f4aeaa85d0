import { JianmuError } from "../tools/jianmu-error.js";

// The recording errors live apart from the writer and the reader, so `import "jianmu"` can export
// them without loading the reader (which is loaded on first use: `lazy.ts`).

/** Writing a recording failed (the directory is not writable, the disk is full, ...). */
export class RecordingError extends JianmuError {
  static override readonly errorCode = "RECORDING_ERROR";
  override name = "RecordingError";
  constructor(
    readonly path: string,
    problem: string,
    options?: { cause?: unknown },
  ) {
    super(`recording ${path}: ${problem}`, options);
  }
}

/** A recording file that cannot be read: names the file, the line and what is wrong with it. */
export class RecordingFormatError extends JianmuError {
  static override readonly errorCode = "RECORDING_FORMAT_ERROR";
  override name = "RecordingFormatError";
  constructor(
    readonly path: string,
    readonly line: number,
    problem: string,
  ) {
    super(`${path}:${line}: ${problem}`);
  }
}
