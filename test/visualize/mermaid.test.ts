import { describe, expect, test } from "vitest";
import type { AnyStateMachine } from "xstate";
import { toMermaid } from "../../visualize/mermaid.js";
import { approvalMachine } from "./approval-run.js";

/**
 * The definition is walked here on its own (StateNode.states, .transitions, .always), not through
 * visualize/chart.ts, so a state or transition the exporter forgets makes this test fail.
 */
interface Node {
  id: string;
  key: string;
  path: string[];
  type: string;
  states: Record<string, Node>;
  initial?: { target: { id: string }[] };
  transitions: Map<string, { target?: { id: string }[]; eventType: string }[]>;
  always?: { target?: { id: string }[]; eventType: string }[];
}

function walk(machine: AnyStateMachine): Node[] {
  const out: Node[] = [];
  const visit = (node: Node) => {
    out.push(node);
    Object.values(node.states).forEach(visit);
  };
  visit(machine.root as unknown as Node);
  return out;
}

/** The documented Mermaid id of a state: its path below the root joined with "_". */
const mermaidId = (node: Node) => node.path.join("_");

describe("toMermaid", () => {
  const machine = approvalMachine();
  const text = toMermaid(machine);
  const lines = text.split("\n").map((l) => l.trim());
  const nodes = walk(machine);
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const root = nodes[0]!;
  const isDescendant = (ancestor: Node, id: string) => id.startsWith(`${ancestor.id}.`);

  test("is a stateDiagram-v2 with balanced blocks", () => {
    expect(lines[0]).toBe("stateDiagram-v2");
    expect(text.split("{").length).toBe(text.split("}").length);
  });

  test("declares every state of the definition, with nested states as composite blocks", () => {
    for (const node of nodes.slice(1)) {
      expect(lines).toContain(`state "${node.key}" as ${mermaidId(node)}`);
      if (Object.keys(node.states).length > 0) expect(lines).toContain(`state ${mermaidId(node)} {`);
    }
    // The ReAct machine's own names, so a renamed state is noticed here too.
    for (const key of ["Initialising", "CheckAbort", "ChildRunning", "AgentLLM", "Preflight", "AwaitingApproval", "Executing", "StateCondition", "CheckBudget", "Retry", "Succeeded", "Failed"]) {
      expect(text).toContain(`"${key}"`);
    }
  });

  test("marks initial and final states", () => {
    for (const node of nodes) {
      const initial = node.initial?.target[0];
      if (initial) expect(lines).toContain(`[*] --> ${mermaidId(byId.get(initial.id)!)}`);
      if (node.type === "final") expect(lines).toContain(`${mermaidId(node)} --> [*]`);
    }
  });

  test("lists every transition of the definition, eventless and invoke results included", () => {
    const arrows = lines.filter((l) => l.includes(" --> ") && !l.startsWith("[*]") && !l.endsWith("[*]"));
    let expected = 0;
    for (const node of nodes) {
      const lists = [...node.transitions.values(), node.always ?? []];
      for (const list of lists) {
        for (const transition of list) {
          const targets = transition.target ?? [];
          const compound = Object.keys(node.states).length > 0;
          const from = node === root ? "root__any" : compound && (targets.length === 0 || targets.some((t) => isDescendant(node, t.id))) ? `${mermaidId(node)}__any` : mermaidId(node);
          if (targets.length === 0) {
            expected += 1;
            expect(arrows.some((l) => l.startsWith(`${from} --> ${from} : `) && l.endsWith("(internal)")), `${node.id} ${transition.eventType}`).toBe(true);
            continue;
          }
          for (const target of targets) {
            expected += 1;
            const to = mermaidId(byId.get(target.id)!);
            const source = node === root || isDescendant(node, target.id) ? from : mermaidId(node);
            expect(arrows.some((l) => l.startsWith(`${source} --> ${to} : `)), `${node.id} → ${target.id} on "${transition.eventType}"`).toBe(true);
          }
        }
      }
    }
    // Nothing extra either: one arrow per (transition, target).
    expect(arrows).toHaveLength(expected);
  });

  test("labels transitions readably", () => {
    expect(text).toContain("Evaluating_CheckAbort --> Failed : [budgetSpent]");
    expect(text).toContain("Evaluating_CheckAbort --> Evaluating_ChildRunning : [else]");
    expect(text).toContain("CheckBudget --> Retry : [iterationsLeft]");
    expect(text).toContain("Retry --> Evaluating : always");
    expect(text).toContain("Evaluating_ChildRunning_AgentLLM --> Failed : llm error");
    expect(text).toMatch(/Evaluating_ChildRunning_AgentLLM --> Evaluating_ChildRunning_ToolExecutor : llm done/);
    expect(text).toContain("root__any --> Failed : agent.cancel");
    expect(text).not.toMatch(/xstate\.(done|error)\.actor/);
  });
});
