import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { resolveModelClient } from "../../actors/openai/openai-model-client.js";
import { requireApproval } from "../../actors/guards/index.js";
import { createReactMachine } from "../../machines/react-machine.js";
import type { OpenAIServer } from "../../testing/openai-server.js";
import { runEvals, type EvalCase } from "../../testing/evals.js";
import { defineTool } from "../../tools/tool.js";
import { recordRun } from "../../visualize/recorder.js";
import { scriptMessage, startScriptServer, type RunScript } from "../queue/script-model.js";
import { cleanEnv, runCli } from "./cli-harness.js";

const OUT = join("test-output", "eval-from-recording");
mkdirSync(OUT, { recursive: true });

/**
 * A recorded run becomes a regression test in one command: `jianmu eval --from-recording run.jsonl`
 * prints the case (its input; its status, tool calls, states and rounds as expectations), and the
 * same agent passes it again, while an agent that takes another way fails it, saying how.
 */
describe("jianmu eval --from-recording", () => {
  let server: OpenAIServer;
  beforeAll(async () => {
    server = await startScriptServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  const tool = (name: "record" | "pay") => defineTool({ name, description: `${name} a note`, parameters: z.object({ note: z.string() }), effectTags: name === "pay" ? ["payment"] : [], execute: ({ note }) => `${name}ed ${note}` });
  const client = () => resolveModelClient({ baseURL: server.baseURL, apiKey: "k", model: "scripted", stream: false, resilience: { maxRetries: 0 } });
  const agent = () =>
    createReactMachine({
      modelClient: client(),
      tools: [tool("record"), tool("pay")],
      constraints: [requireApproval({ effectTags: ["payment"] })],
      configFile: false,
    });
  const script: RunScript = { calls: [{ name: "record", note: "a" }, { name: "pay", note: "b" }], answer: "Recorded and paid." };

  it("prints the recorded run as a case the same agent passes again, and one that takes another way fails", async () => {
    const path = join(OUT, "run.jsonl");
    const { output } = await recordRun(agent(), { messages: [scriptMessage(script)] }, { path, onApproval: () => ({ approve: true }) });
    expect(output.status).toBe("succeeded");

    const printed = await runCli(["eval", "--from-recording", path], { env: cleanEnv() });
    expect(printed.stderr).toBe("");
    expect(printed.code).toBe(0);
    const recorded = JSON.parse(printed.stdout) as EvalCase;
    expect(recorded.input).toEqual({ messages: [scriptMessage(script)] });
    expect(recorded.expect).toMatchObject({ status: "succeeded", tools: ["record", "pay"], toolOrder: "exact", maxRounds: 3 });
    expect(recorded.expect.visits).toEqual(expect.arrayContaining(["AgentLLM", "Executing", "AwaitingApproval", "Succeeded"]));

    const again = await runEvals(agent(), [recorded], { runOptions: { onApproval: () => ({ approve: true }) } });
    expect(again.results[0]!.failures).toEqual([]);

    // The same input, but the agent's guard now lets a payment through without a person: the regression says what changed.
    const noApproval = createReactMachine({
      modelClient: client(),
      tools: [tool("record"), tool("pay")],
      constraints: [requireApproval({ effectTags: ["deletes"] })],
      configFile: false,
    });
    const changed = await runEvals(noApproval, [recorded]);
    expect(changed.results[0]!.failures).toEqual(["it never entered AwaitingApproval"]);
    // An agent whose chart has no such state at all is told so before anything runs.
    const noGuards = createReactMachine({ modelClient: client(), tools: [tool("record")], configFile: false });
    await expect(runEvals(noGuards, [recorded])).rejects.toThrow(/the agent's chart has no state "AwaitingApproval"/);
  });

  it("refuses a file that is no recording, naming how to make one", async () => {
    const result = await runCli(["eval", "--from-recording", "package.json"], { env: cleanEnv() });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^jianmu: cannot read the recording package\.json: .*\(record a run with: jianmu run --record run\.jsonl\)\n$/);
    const both = await runCli(["eval", "cases.mjs", "--from-recording", "run.jsonl"], { env: cleanEnv() });
    expect(both.code).toBe(2);
    expect(both.stderr).toContain("--from-recording takes no module");
  });
});
