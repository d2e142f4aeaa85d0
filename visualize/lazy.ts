import type * as AnalysisModule from "./analysis.js";
import type * as ReaderModule from "./recording-reader.js";
import type * as ReplayModule from "./replay.js";
import type * as ViewerModule from "./viewer.js";

/*
 * The recording reader, the run analysis and the HTML viewer as `import "jianmu"` exports them:
 * each is async anyway, so its module (the zod schemas of every record, the page's renderer and
 * styles) loads on the first call instead of on import (bench/import.mjs measures the difference).
 * Same functions, same types: each forwards to the real one.
 */

/** Streams a recording: the header checked first, the lines parsed as the caller iterates (`recording-reader.ts`). */
export const readRecording: typeof ReaderModule.readRecording = async (...args) => (await import("./recording-reader.js")).readRecording(...args);

/** Replays a recording's inspection events into an inspector adapter, observer or function (`replay.ts`). */
export const replayRecording: typeof ReplayModule.replayRecording = async (...args) => (await import("./replay.js")).replayRecording(...args);

/** What a recording says about its run: states visited, timeline, messages (`analysis.ts`). */
export const analyzeRecording: typeof AnalysisModule.analyzeRecording = async (...args) => (await import("./analysis.js")).analyzeRecording(...args);

/** The self-contained HTML viewer of a recording, as a string (`viewer.ts`). */
export const renderViewer: typeof ViewerModule.renderViewer = async (...args) => (await import("./viewer.js")).renderViewer(...args);

/** Writes the self-contained HTML viewer of a recording to `outPath` (`viewer.ts`). */
export const writeViewer: typeof ViewerModule.writeViewer = async (...args) => (await import("./viewer.js")).writeViewer(...args);
