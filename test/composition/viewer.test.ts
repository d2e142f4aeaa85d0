import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { human } from "../../actors/messages.js";
import { agentTool } from "../../machines/composition/agent-tool.js";
import { handoff } from "../../machines/composition/handoff.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import { analyzeRecording } from "../../visualize/analysis.js";
import { recordRun } from "../../visualize/recorder.js";
import { renderViewer } from "../../visualize/viewer.js";
import { add, multiply } from "../core/helpers.js";

const dir = mkdtempSync(join(tmpdir(), "jianmu-composition-viewer-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Triage asks a calculator agent (its call id repeats the triage's own, on purpose), then hands off to a closer. */
function agents() {
  const calculator = createReactMachine({
    name: "Calculator",
    modelClient: scriptedModel([{ toolCalls: [{ id: "c1", name: "multiply", arguments: { a: 6, b: 7 } }] }, { content: "42" }]),
    tools: [multiply],
    configFile: false,
  });
  const closer = createReactMachine({ name: "Closer", modelClient: scriptedModel([{ content: "The answer is 42. Bye!" }]), configFile: false });
  const triage = createReactMachine({
    name: "Triage",
    modelClient: scriptedModel([
      { toolCalls: [{ id: "c1", name: "add", arguments: { a: 1, b: 1 } }] },
      { toolCalls: [{ id: "t2", name: "calculate", arguments: { input: "6 times 7" } }] },
      { toolCalls: [{ id: "t3", name: "transfer_to_Closer", arguments: {} }] },
    ]),
    tools: [add, agentTool(calculator, { name: "calculate", description: "Ask the calculator agent" }), handoff(closer)],
    configFile: false,
  });
  return triage;
}

describe("the run viewer shows nested agents and handoffs", () => {
  it("lists each nested agent and its child actor, draws its calls under its name, and shows the HandingOff state", async () => {
    const path = join(dir, "composition.jsonl");
    const { output } = await recordRun(agents(), { messages: [human("what is 6 times 7?")] }, { path });
    expect(output.finalAnswer).toBe("The answer is 42. Bye!");

    const a = await analyzeRecording(path);
    expect(a.summary).toMatchObject({ agent: "Triage", status: "succeeded" });
    expect(a.nestedAgents).toEqual([
      expect.objectContaining({ path: [{ agent: "Calculator", callId: "t2" }], status: "succeeded", modelCalls: 2, toolCalls: 1 }),
      expect.objectContaining({ path: [{ agent: "Closer", callId: "t3" }], status: "succeeded", modelCalls: 1, toolCalls: 0 }),
    ]);
    expect(a.nestedActors.map((n) => [n.id, n.src])).toEqual([
      ["Triage.agent", "agent.calculate"],
      ["Triage.agent", "agent.transfer_to_Closer"],
    ]);
    // The same call id at two levels: two separate, finished timeline entries.
    const c1 = a.timeline.filter((e) => e.kind === "tool" && e.id === "c1");
    expect(c1.map((e) => [e.name, e.agent ?? null, e.status])).toEqual([
      ["add", null, "ok"],
      ["multiply", "Calculator (call t2)", "ok"],
    ]);
    expect(a.steps.map((s) => s.state)).toContain("Triage.Evaluating.ChildRunning.ToolExecutor.HandingOff");
    expect(a.steps.map((s) => s.state)).toContain("Triage.Evaluating.ChildRunning.ToolExecutor.Delegating");
    expect(a.markers).toEqual([expect.objectContaining({ kind: "handoff", name: "Closer" })]);

    const html = await renderViewer(path);
    expect(html).toContain('id="nested-panel"');
    expect(html).toContain('data-nested-actor="Triage.agent"');
    expect(html).toContain('data-agent="Calculator (call t2)"');
    expect(html).toContain('data-marker="handoff"');
  });
});
