import { beforeAll, describe, expect, it } from "vitest";
import { createActor } from "xstate";
import { human } from "../../actors/messages.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { persistAgent, readPersisted, restoreAgent, SNAPSHOT_FORMAT, SNAPSHOT_VERSION, SnapshotError, statePath, type PersistedAgent } from "../../machines/persistence/persistence.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import { approvalFor, awaitingApproval, countingTool, waitFor } from "./helpers.js";

const machineNamed = (name?: string) =>
  createReactMachine({ ...(name ? { name } : {}), modelClient: scriptedModel([]), tools: [countingTool().tool], constraints: [approvalFor("record")] });

let saved: PersistedAgent;

beforeAll(async () => {
  const model = scriptedModel([{ toolCalls: [{ id: "call_1", name: "record", arguments: { note: "x" } }] }]);
  const machine = createReactMachine({ modelClient: model, tools: [countingTool().tool], constraints: [approvalFor("record")] });
  const actor = createActor(machine, { input: { messages: [human("go")], runId: "run-envelope" } });
  actor.start();
  await waitFor(actor, awaitingApproval);
  saved = persistAgent(actor, () => 1_700_000_000_000);
  actor.stop();
});

/** A deep copy of the saved run with one change applied. */
function tampered(change: (copy: Record<string, any>) => void): string {
  const copy = JSON.parse(JSON.stringify(saved)) as Record<string, any>;
  change(copy);
  return JSON.stringify(copy);
}

function refusal(machine: ReturnType<typeof machineNamed>, input: unknown): SnapshotError {
  try {
    restoreAgent(machine, input);
  } catch (error) {
    expect(error).toBeInstanceOf(SnapshotError);
    return error as SnapshotError;
  }
  throw new Error("restoreAgent accepted a snapshot it should have refused");
}

describe("the snapshot envelope", () => {
  it("says what it is, which machine and run it belongs to, and where the run stands", () => {
    expect(saved).toMatchObject({
      format: SNAPSHOT_FORMAT,
      version: SNAPSHOT_VERSION,
      machine: "ReActAgent",
      runId: "run-envelope",
      state: "Evaluating.ChildRunning.ToolExecutor.AwaitingApproval",
      status: "awaitingApproval",
      iteration: 0,
      savedAt: 1_700_000_000_000,
    });
    expect(saved.snapshot).toMatchObject({ status: "active", value: { Evaluating: { ChildRunning: { ToolExecutor: "AwaitingApproval" } } } });
    // What persistAgent returns survives JSON unchanged: it is what a store gives back.
    expect(JSON.parse(JSON.stringify(saved))).toEqual(saved);
  });

  it("restores from the object or its JSON text", () => {
    const machine = machineNamed();
    expect(restoreAgent(machine, saved)).toEqual(saved.snapshot);
    expect(restoreAgent(machine, JSON.stringify(saved))).toEqual(saved.snapshot);
  });

  it("statePath flattens nested state values", () => {
    expect(statePath("Initialising")).toBe("Initialising");
    expect(statePath({ Evaluating: { ChildRunning: "AgentLLM" } })).toBe("Evaluating.ChildRunning.AgentLLM");
  });
});

describe("restoring an incompatible snapshot fails with a reason and a remedy", () => {
  it("another format version", () => {
    const newer = refusal(machineNamed(), tampered((c) => (c.version = 3)));
    expect(newer.problem).toBe("version");
    expect(newer.message).toMatch(/saved with snapshot format version 3 and this jianmu reads versions 1 and 2; restore it with the newer jianmu/);
    const older = refusal(machineNamed(), tampered((c) => (c.version = 0)));
    expect(older.message).toMatch(/version 0 .*finish it with the jianmu version that saved it/);
  });

  it("another machine", () => {
    const error = refusal(machineNamed("Billing"), saved);
    expect(error.problem).toBe("machine");
    expect(error.message).toBe(
      'cannot restore run run-envelope: it was saved by machine "ReActAgent" but this machine is "Billing"; create the machine with createReactMachine({ name: "ReActAgent", ... }) to continue it',
    );
  });

  it("not our format: another format name, a bare XState snapshot, not an object", () => {
    expect(refusal(machineNamed(), tampered((c) => (c.format = "other.snapshot"))).message).toMatch(
      /not a jianmu snapshot \(format is "other.snapshot", expected "jianmu.snapshot"\)/,
    );
    const bare = refusal(machineNamed(), JSON.stringify(saved.snapshot));
    expect(bare.problem).toBe("format");
    expect(bare.message).toMatch(/bare XState snapshot .* persistAgent\(actor\)/);
    expect(refusal(machineNamed(), "[1,2]").message).toMatch(/got an array/);
    expect(refusal(machineNamed(), null).message).toMatch(/got null/);
    expect(refusal(machineNamed(), undefined).message).toMatch(/nothing was given .*store\.list\(\)/);
  });

  it("corrupt JSON", () => {
    const text = JSON.stringify(saved);
    const error = refusal(machineNamed(), text.slice(0, text.length / 2));
    expect(error.problem).toBe("json");
    expect(error.message).toMatch(/not valid JSON .*damaged or truncated/);
  });

  it("a damaged envelope names the field", () => {
    const error = refusal(machineNamed(), tampered((c) => delete c.snapshot.children));
    expect(error.problem).toBe("shape");
    expect(error.message).toMatch(/saved\.snapshot\.children /);
    expect(refusal(machineNamed(), tampered((c) => (c.savedAt = "yesterday"))).message).toMatch(/saved\.savedAt /);
  });

  it("a context that does not match the schema names the path", () => {
    const loop = refusal(machineNamed(), tampered((c) => (c.snapshot.context.loop.decisions[0].status = "maybe")));
    expect(loop.problem).toBe("context");
    expect(loop.message).toMatch(/snapshot\.context\.loop\.decisions\[0\]\.status /);
    const missing = refusal(machineNamed(), tampered((c) => delete c.snapshot.context.loop.runId));
    expect(missing.message).toMatch(/snapshot\.context\.loop\.runId /);
  });

  it("agent state that does not fit the machine's state schema names the host-state field", () => {
    const error = refusal(machineNamed(), tampered((c) => (c.snapshot.context.state.rounds = "one")));
    expect(error.problem).toBe("context");
    expect(error.message).toMatch(/state\.rounds .*does not fit this machine's state schema/);
  });

  it("a state the machine does not have", () => {
    const error = refusal(
      machineNamed(),
      tampered((c) => {
        c.snapshot.value = { Evaluating: { ChildRunning: "Daydreaming" } };
        c.state = "Evaluating.ChildRunning.Daydreaming";
      }),
    );
    expect(error.problem).toBe("state");
    expect(error.message).toMatch(/state "Evaluating.ChildRunning.Daydreaming" does not exist in machine "ReActAgent"/);
  });

  it("an invoked actor whose logic this machine does not provide", () => {
    const error = refusal(machineNamed(), tampered((c) => (c.snapshot.children["ReActAgent.approvalTimer"].src = "oldTimer")));
    expect(error.problem).toBe("actors");
    expect(error.message).toMatch(/"ReActAgent.approvalTimer" uses logic "oldTimer".*machine\.provide/);
  });

  it("readPersisted checks only the envelope, for stores that list runs of several machines", () => {
    expect(readPersisted(JSON.stringify(saved)).machine).toBe("ReActAgent");
    expect(() => readPersisted("{")).toThrow(SnapshotError);
  });
});
