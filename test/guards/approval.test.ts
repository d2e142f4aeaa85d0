import { describe, expect, it } from "vitest";
import { GuardOptionsError, requireApproval } from "../../actors/guards/index.js";
import type { GuardCall, GuardContext } from "../../actors/guard.js";
import type { ToolInfo } from "../../tools/tool.js";
import { guardCall, guardContext, toolInfo } from "./fixtures.js";

const info = toolInfo;
const call = (name: string, tool: ToolInfo | undefined): GuardCall => guardCall(name, undefined, tool);
const ctx = (c: GuardCall): GuardContext => guardContext([c], { now: 1_000 });
const check = (guard: ReturnType<typeof requireApproval>, c: GuardCall) => guard(c, ctx(c));

describe("requireApproval", () => {
  it("makes calls to the named tools pending and leaves the others alone", () => {
    const guard = requireApproval({ tools: ["send_email"] });
    expect(check(guard, call("send_email", info("send_email")))).toEqual({ decision: "pending", reason: "send_email needs approval before it runs" });
    expect(check(guard, call("search", info("search")))).toEqual({ decision: "allow" });
  });

  it("matches tools by effect tag and says which tag it matched", () => {
    const guard = requireApproval({ effectTags: ["destructive", "network"] });
    expect(check(guard, call("rm", info("rm", ["fs", "destructive"])))).toEqual({
      decision: "pending",
      reason: "rm needs approval before it runs (it is tagged destructive)",
    });
    expect(check(guard, call("fetch", info("fetch", ["network"])))).toMatchObject({ decision: "pending" });
    expect(check(guard, call("read", info("read", ["fs"])))).toEqual({ decision: "allow" });
    // An unknown tool has no tags to match.
    expect(check(guard, call("mystery", undefined))).toEqual({ decision: "allow" });
  });

  it("carries the custom reason, the timeout and what to do when it passes", () => {
    const guard = requireApproval({ tools: ["deploy"], reason: "deploys need a human", timeoutMs: 5_000, onTimeout: "fail" });
    expect(check(guard, call("deploy", info("deploy")))).toEqual({ decision: "pending", reason: "deploys need a human", timeoutMs: 5_000, onTimeout: "fail" });
    // A timeout without onTimeout rejects by default.
    expect(check(requireApproval({ tools: ["deploy"], timeoutMs: 50 }), call("deploy", info("deploy")))).toMatchObject({ timeoutMs: 50, onTimeout: "reject" });
  });

  it("rejects options it cannot act on, naming the field", () => {
    expect(() => requireApproval({})).toThrow(GuardOptionsError);
    expect(() => requireApproval({})).toThrow(/requireApproval: options must name tools, effectTags or both/);
    expect(() => requireApproval({ tools: ["x"], timeoutMs: -1 })).toThrow(/options\.timeoutMs is invalid: must be a positive number/);
    expect(() => requireApproval({ tools: ["x"], onTimeout: "explode" as "fail", timeoutMs: 1 })).toThrow(/options\.onTimeout/);
    expect(() => requireApproval({ tools: ["x"], onTimeout: "fail" })).toThrow(/options\.onTimeout needs options\.timeoutMs/);
    expect(() => requireApproval({ effectTags: [] })).toThrow(/options\.effectTags is invalid: list at least one effect tag/);
    expect(() => requireApproval({ tool: "x" } as never)).toThrow(/requireApproval: options has unknown key "tool" \(known: tools, effectTags, reason, timeoutMs, onTimeout\)/);
  });
});
