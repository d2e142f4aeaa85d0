import type { EvalCase } from "../testing/evals.js";
import { analyzeRecording } from "../visualize/analysis.js";

/**
 * A recorded run (`jianmu run --record run.jsonl`) as an eval case: its input, and what it did as the
 * expectations a rerun should meet. The run becomes a regression test: the same status, the same tool
 * calls in the same order, every state it went through, and no more model rounds. The answer's wording
 * is left out (a model words it differently each time); edit the case to say what must hold.
 */
export async function recordedCase(path: string): Promise<{ evalCase: EvalCase; dropped: number }> {
  const analysis = await analyzeRecording(path);
  const { summary, messages, steps, timeline } = analysis;
  // The input: the conversation before the first reply (the system prompt is the agent's, not the case's).
  const firstReply = messages.findIndex((m) => m.role === "assistant");
  const before = messages.slice(0, firstReply === -1 ? messages.length : firstReply).filter((m) => m.role === "user");
  // Images and files are kept in the recording as references, not bytes: the case keeps their text only.
  const dropped = before.filter((m) => (m.parts ?? []).some((part) => part.type !== "text")).length;
  const input = { messages: before.map((m) => ({ role: "user" as const, content: m.content ?? "" })) };
  const tools = timeline.filter((entry) => entry.kind === "tool" && entry.agent === undefined).map((entry) => entry.name);
  // Each state's key once, in the order first entered (a state id is the machine id and its path).
  const visits = [...new Set(steps.map((step) => step.state.split(".").at(-1)!))];
  const status = summary.status === "succeeded" || summary.status === "failed" ? summary.status : undefined;
  const evalCase: EvalCase = {
    name: `${summary.agent} ${summary.runId ?? path}`,
    input,
    expect: { ...(status ? { status } : {}), tools, toolOrder: "exact", visits, ...(summary.rounds > 0 ? { maxRounds: summary.rounds } : {}) },
  };
  return { evalCase, dropped };
}
