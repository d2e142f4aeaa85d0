import type { ReactMachine } from "../machines/react-machine.js";
import { EvalDefinitionError, evalTotals, formatEvalResult, runEvals, type EvalCase, type EvalReport, type EvalResult } from "../testing/evals.js";
import { UsageError, type EvalArgs } from "./args.js";
import type { Interrupts } from "./interrupts.js";
import type { Terminal } from "./progress.js";
import { importUserModule } from "./user-module.js";
import { recordedCase } from "./recorded-case.js";
import { resolve } from "node:path";

/** The module's `agent` and `cases`, or a UsageError saying what it lacks. */
async function loadEvalModule(spec: string, cwd: string): Promise<{ agent: ReactMachine; cases: EvalCase[] }> {
  const mod = await importUserModule(spec, cwd, { named: spec, rerun: `eval ${spec}` });
  const agent = mod["agent"];
  if (typeof agent !== "object" || agent === null || !("config" in agent) || !("id" in agent)) {
    throw new UsageError(`${spec} exports no agent: export const agent = createReactMachine({ ... })`);
  }
  if (!Array.isArray(mod["cases"])) throw new UsageError(`${spec} exports no cases: export const cases = [{ name, input, expect }, ...]`);
  return { agent: agent as ReactMachine, cases: mod["cases"] as EvalCase[] };
}

/** The report as JSON: each case's verdict and what the run did, without the whole conversation. */
function reportJson(report: EvalReport) {
  return {
    passed: report.passed,
    failed: report.failed,
    cases: report.results.map((r) => ({
      name: r.name,
      pass: r.pass,
      failures: r.failures,
      status: r.output.status,
      answer: r.output.finalAnswer,
      rounds: r.output.rounds,
      usage: r.output.usage,
      durationMs: Math.round(r.durationMs),
      trajectory: r.trajectory,
    })),
  };
}

/** `jianmu eval <module>`: 0 when every case passed, 1 when one failed; an interruption cancels the runs under way. */
export async function evalCommand(args: EvalArgs, ctx: Terminal & { cwd: string; interrupts: Interrupts }): Promise<number> {
  if ("fromRecording" in args) return printRecordedCase(args.fromRecording, ctx);
  const { agent, cases } = await loadEvalModule(args.module, ctx.cwd);
  const controller = new AbortController();
  const undo = ctx.interrupts.on(() => controller.abort());
  try {
    // As text, each case is printed as it ends; as JSON, the report once, whole.
    const onResult = args.json ? undefined : (result: EvalResult) => void (ctx.interrupts.reason?.quiet || ctx.out.write(`${formatEvalResult(result)}\n`));
    const report = await runEvals(agent, cases, { concurrency: args.concurrency, runOptions: { signal: controller.signal }, ...(onResult ? { onResult } : {}) });
    const interrupted = ctx.interrupts.reason;
    if (!interrupted?.quiet) ctx.out.write(`${args.json ? JSON.stringify(reportJson(report)) : evalTotals(report)}\n`);
    if (interrupted) return interrupted.code;
    return report.failed === 0 ? 0 : 1;
  } catch (error) {
    if (error instanceof EvalDefinitionError) throw new UsageError(error.message);
    throw error;
  } finally {
    undo();
  }
}

/** `jianmu eval --from-recording run.jsonl`: the case the recorded run makes, as JSON on stdout. */
async function printRecordedCase(file: string, ctx: Terminal & { cwd: string }): Promise<number> {
  let made: Awaited<ReturnType<typeof recordedCase>>;
  try {
    made = await recordedCase(resolve(ctx.cwd, file));
  } catch (error) {
    throw new UsageError(`cannot read the recording ${file}: ${error instanceof Error ? error.message.split("\n")[0] : String(error)} (record a run with: jianmu run --record run.jsonl)`);
  }
  if (made.dropped > 0) ctx.err.write(`jianmu: ${made.dropped} input message(s) held images or files; the case keeps their text only\n`);
  ctx.out.write(`${JSON.stringify(made.evalCase, null, 2)}\n`);
  return 0;
}
