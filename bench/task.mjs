/*
 * The benchmark's tasks, shared by the server process and the contenders. A task is named by the
 * `model` string of every request, so the server needs no per-run state: the round it answers is
 * the number of assistant messages already in the request's history.
 *
 *   bench-k10-p1-lookup         10 rounds of 1 `lookup` call, then the final answer
 *   bench-k1-p8-sleep50         1 round of 8 parallel `sleep` calls of 50 ms, then the answer
 *   bench-k2-p1-lookup-hold1    like the first, but the reply to round 1 waits for a release
 *   bench-k0-p1-lookup-pause20  the answer's first delta streamed at once, then a 20 ms pause
 *                               before the rest (the first-token row)
 */

/** @typedef {{ k: number, p: number, tool: "lookup" | "sleep", sleepMs: number, hold: number | undefined, pause: number | undefined }} Task */

/** @param {{ k: number, p: number, tool?: "lookup" | "sleep", sleepMs?: number, hold?: number, pause?: number }} task */
export function taskModel(task) {
  const tool = task.tool === "sleep" ? `sleep${task.sleepMs ?? 50}` : "lookup";
  return `bench-k${task.k}-p${task.p}-${tool}${task.hold !== undefined ? `-hold${task.hold}` : ""}${task.pause !== undefined ? `-pause${task.pause}` : ""}`;
}

/** @returns {Task | undefined} */
export function parseTaskModel(model) {
  const match = /^bench-k(\d+)-p(\d+)-(lookup|sleep(\d+))(?:-hold(\d+))?(?:-pause(\d+))?$/.exec(String(model));
  if (!match) return undefined;
  return {
    k: Number(match[1]),
    p: Number(match[2]),
    tool: match[3] === "lookup" ? "lookup" : "sleep",
    sleepMs: match[4] !== undefined ? Number(match[4]) : 0,
    hold: match[5] !== undefined ? Number(match[5]) : undefined,
    pause: match[6] !== undefined ? Number(match[6]) : undefined,
  };
}

/** The final answer every contender must return (checked, so a broken run cannot look fast). */
export function finalAnswer(task) {
  return `All ${task.k} rounds of ${task.p} ${task.tool} calls are done; the answer is 42.`;
}

/** What one `lookup` call returns: a realistic observation of ~120 characters. */
export function lookupResult(query) {
  return `Result for ${query}: the record exists, was last updated on 2024-05-01 and has 3 related entries (a, b, c).`;
}

/** The arguments the model sends for call `index` of `round`. */
export function callArguments(task, round, index) {
  return task.tool === "sleep" ? { ms: task.sleepMs } : { query: `item-${round}-${index}` };
}

export const BENCH_PROMPT = "Look up the items one by one, then tell me the answer.";

/**
 * The round a request asks for: Chat Completions, the number of assistant messages so far;
 * the Responses API (`path` ending in /responses), the number of function-call batches in the input.
 */
export function roundOf(path, body, task) {
  if (String(path).endsWith("/responses")) return (body.input ?? []).filter((item) => item.type === "function_call").length / task.p;
  return (body.messages ?? []).filter((message) => message.role === "assistant").length;
}
