import { describe, expect, it } from "vitest";
import { createActor, toPromise } from "xstate";
import { allowTools, callBudget, denyTools, rateLimit, requireApproval } from "../../actors/guards/index.js";
import { createPreflightActor, decide, type Guard, type GuardCall, type GuardContext } from "../../actors/guard.js";
import { guardCall, guardContext, toolInfo } from "./fixtures.js";

const info = toolInfo;
const call = (name: string, tags: string[] = [], id = `id_${name}`): GuardCall => guardCall(name, id, info(name, tags));
const ctx = (batch: GuardCall[]): GuardContext => guardContext(batch, { now: 1_000, state: { mode: "test" } });
const judge = (guards: Guard[], c: GuardCall) => decide(guards, c, ctx([c]));

describe("composing guards with decide()", () => {
  const approval = requireApproval({ effectTags: ["destructive"], timeoutMs: 5_000 });

  it("any deny wins over pending and allow", async () => {
    const rm = call("rm", ["destructive"]);
    expect(await judge([approval, denyTools(["rm"]), allowTools(["rm"])], rm)).toEqual({
      decision: "deny",
      reason: "rm may not be used here. Use another tool or answer without it.",
    });
    // Order does not matter.
    expect(await judge([allowTools(["rm"]), approval, denyTools(["rm"])], rm)).toMatchObject({ decision: "deny" });
  });

  it("then any pending, keeping every reason and the strictest deadline", async () => {
    const strict = requireApproval({ tools: ["rm"], reason: "the on-call must agree", timeoutMs: 1_000, onTimeout: "fail" });
    expect(await judge([allowTools(["rm"]), approval, strict], call("rm", ["destructive"]))).toEqual({
      decision: "pending",
      reason: "rm needs approval before it runs (it is tagged destructive); the on-call must agree",
      timeoutMs: 1_000,
      onTimeout: "fail",
    });
  });

  it("else allow", async () => {
    expect(await judge([allowTools(["ls"]), approval, callBudget({ maxCalls: 5 }), rateLimit({ tool: "ls", maxCalls: 1, windowMs: 1_000 })], call("ls"))).toEqual({
      decision: "allow",
    });
  });

  it("a guard that throws denies, even when every other guard allows", async () => {
    const broken: Guard = () => {
      throw new Error("policy store unreachable");
    };
    expect(await judge([allowTools(["ls"]), broken], call("ls"))).toEqual({
      decision: "deny",
      reason: "a guard failed (policy store unreachable); the call was blocked",
    });
  });

  it("async custom guards work, and a rejected promise denies like a throw", async () => {
    const seen: string[] = [];
    const asyncPolicy: Guard = async (c, context) => {
      await new Promise((resolve) => setImmediate(resolve));
      seen.push(`${c.name}@${String(context.state["mode"])}`);
      return c.args?.["path"] === "/" ? { decision: "deny", reason: "not the root directory" } : { decision: "allow" };
    };
    const root: GuardCall = { ...call("rm"), arguments: '{"path":"/"}', args: { path: "/" } };
    expect(await judge([asyncPolicy], root)).toEqual({ decision: "deny", reason: "not the root directory" });
    expect(await judge([asyncPolicy, requireApproval({ tools: ["rm"] })], call("rm"))).toMatchObject({ decision: "pending" });
    expect(seen).toEqual(["rm@test", "rm@test"]);
    const failing: Guard = async () => Promise.reject(new Error("timeout talking to OPA"));
    expect(await judge([failing], call("ls"))).toMatchObject({ decision: "deny", reason: expect.stringContaining("timeout talking to OPA") });
  });

  it("a guard that returns something that is not a decision denies", async () => {
    const sloppy = (() => ({ decision: "maybe" })) as unknown as Guard;
    expect(await judge([sloppy], call("ls"))).toMatchObject({ decision: "deny", reason: expect.stringContaining("not a decision") });
  });
});

describe("built-in guards in the Preflight actor", () => {
  it("judges a whole batch: budget in batch order, approval with an absolute deadline, deny lists", async () => {
    const preflight = createPreflightActor(
      [denyTools(["shell"]), callBudget({ perTool: { calculator: 2 } }), requireApproval({ effectTags: ["network"], timeoutMs: 50 })],
      () => 5_000,
    );
    const calls = [
      { id: "c1", name: "calculator", arguments: "{}" },
      { id: "c2", name: "calculator", arguments: "{}" },
      { id: "c3", name: "calculator", arguments: "{}" },
      { id: "f1", name: "fetch", arguments: '{"url":"https://example.com"}' },
      { id: "s1", name: "shell", arguments: "{}" },
    ];
    const actor = createActor(preflight, {
      input: { calls, tools: [info("calculator"), info("fetch", ["network"]), info("shell")], state: {}, runId: "r", iteration: 0, history: [] },
    });
    actor.start();
    const { decisions } = await toPromise(actor);
    expect(decisions.map((d) => [d.callId, d.status])).toEqual([
      ["c1", "allowed"],
      ["c2", "allowed"],
      ["c3", "denied"],
      ["f1", "pending"],
      ["s1", "denied"],
    ]);
    expect(decisions[3]).toMatchObject({ deadline: 5_050, onTimeout: "reject", reason: "fetch needs approval before it runs (it is tagged network)" });
  });
});
