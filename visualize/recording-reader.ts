import { createReadStream } from "node:fs";
import { createInterface } from "node:readline";
import { HeaderSchema, RECORDING_FORMAT, RecordLineSchema, type RecordLine, type RecordingHeader } from "./recording-format.js";
import { RecordingFormatError } from "./recording-errors.js";

export { RecordingFormatError };

export interface RecordingContents {
  header: RecordingHeader;
  /** The records after the header, read lazily line by line. */
  lines: AsyncIterable<RecordLine>;
}

function describeIssue(error: { issues: readonly { path: readonly PropertyKey[]; message: string }[] }): string {
  const issue = error.issues[0];
  if (!issue) return "invalid record";
  return `${issue.path.length > 0 ? issue.path.map(String).join(".") : "(record)"}: ${issue.message}`;
}

/**
 * Stream a recording: the header is read and checked first, the other lines are parsed one at a
 * time as the caller iterates (memory does not grow with the file). A missing `end` line is fine:
 * a run that crashed still leaves a readable recording.
 */
export async function readRecording(path: string): Promise<RecordingContents> {
  const stream = createReadStream(path, { encoding: "utf8" });
  const opened = new Promise<void>((resolve, reject) => {
    stream.once("open", () => resolve());
    stream.once("error", (error) => reject(new RecordingFormatError(path, 0, `cannot read the file: ${error.message}`)));
  });
  await opened;
  const reader = createInterface({ input: stream, crlfDelay: Infinity })[Symbol.asyncIterator]();
  let lineNumber = 0;
  const parse = (text: string): unknown => {
    try {
      return JSON.parse(text);
    } catch {
      throw new RecordingFormatError(path, lineNumber, "not valid JSON (is this a jianmu recording, written by RunRecorder?)");
    }
  };

  let first = await reader.next();
  lineNumber += 1;
  while (!first.done && first.value.trim() === "") {
    first = await reader.next();
    lineNumber += 1;
  }
  if (first.done) throw new RecordingFormatError(path, lineNumber, "the file is empty; a recording starts with a header line");
  const headerValue = parse(first.value);
  const header = HeaderSchema.safeParse(headerValue);
  if (!header.success) {
    const format = (headerValue as { format?: unknown } | null)?.format;
    const problem = format !== RECORDING_FORMAT ? `the first line is not a ${RECORDING_FORMAT} header` : `bad header: ${describeIssue(header.error)}`;
    stream.destroy();
    throw new RecordingFormatError(path, lineNumber, problem);
  }

  async function* lines(): AsyncGenerator<RecordLine> {
    try {
      for (let next = await reader.next(); !next.done; next = await reader.next()) {
        lineNumber += 1;
        if (next.value.trim() === "") continue;
        const parsed = RecordLineSchema.safeParse(parse(next.value));
        if (!parsed.success) throw new RecordingFormatError(path, lineNumber, describeIssue(parsed.error));
        yield parsed.data;
      }
    } finally {
      stream.destroy();
    }
  }
  return { header: header.data, lines: lines() };
}

/**
 * Each actor's parent, by session id: the sender (`source`) of its `xstate.init` event, which XState's
 * inspection reports with the parent that started it. (Read in a pass of its own: an actor's line
 * comes before its init event.)
 */
export async function parentsOf(path: string): Promise<Map<string, string>> {
  const parents = new Map<string, string>();
  const { lines } = await readRecording(path);
  for await (const line of lines) {
    if (line.k === "actor" && line.parent !== undefined) parents.set(line.actor, line.parent);
    else if (line.k === "event" && line.event.type === "xstate.init" && line.source !== undefined && !parents.has(line.actor)) parents.set(line.actor, line.source);
  }
  return parents;
}
