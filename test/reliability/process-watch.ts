/**
 * Watches the process for what a reliable library must never cause: unhandled promise
 * rejections and warnings such as MaxListenersExceededWarning. Start it before the work, stop it
 * after, and assert on what it caught.
 */
export interface ProcessWatch {
  readonly rejections: unknown[];
  readonly warnings: Error[];
  /** What was written with console.warn / console.error meanwhile (e.g. XState's "sent to stopped actor"). */
  readonly consoleLines: string[];
  /** Lets pending rejections surface (Node reports them after the microtask queue drains), then detaches. */
  stop(): Promise<void>;
}

export function watchProcess(): ProcessWatch {
  const rejections: unknown[] = [];
  const warnings: Error[] = [];
  const onRejection = (reason: unknown) => rejections.push(reason);
  const onWarning = (warning: Error) => warnings.push(warning);
  const consoleLines: string[] = [];
  const { warn, error } = console;
  console.warn = (...args: unknown[]) => void consoleLines.push(args.map(String).join(" "));
  console.error = (...args: unknown[]) => void consoleLines.push(args.map(String).join(" "));
  process.on("unhandledRejection", onRejection);
  process.on("warning", onWarning);
  return {
    rejections,
    warnings,
    consoleLines,
    async stop() {
      // Two macrotask turns: 'unhandledRejection' fires after the microtasks of the turn that rejected.
      await new Promise((resolve) => setImmediate(resolve));
      await new Promise((resolve) => setImmediate(resolve));
      process.off("unhandledRejection", onRejection);
      process.off("warning", onWarning);
      console.warn = warn;
      console.error = error;
    },
  };
}

/** How many property cases to run: JIANMU_PROPERTY_RUNS when set, else the default. */
export function propertyRuns(defaultRuns: number): number {
  const raw = process.env["JIANMU_PROPERTY_RUNS"];
  if (raw === undefined || raw.trim() === "") return defaultRuns;
  const runs = Number.parseInt(raw, 10);
  if (!Number.isFinite(runs) || runs < 1) throw new Error(`JIANMU_PROPERTY_RUNS must be a positive integer, got ${JSON.stringify(raw)}`);
  return runs;
}

/** Counts cases across the properties of one file, so a test can prove how many really ran. */
export class CaseCounter {
  count = 0;
  tick(): void {
    this.count += 1;
  }
}
