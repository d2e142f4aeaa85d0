import { describe, expect, it } from "vitest";
import { allowTools, denyTools, GuardOptionsError } from "../../actors/guards/index.js";
import type { GuardCall, GuardContext } from "../../actors/guard.js";
import { guardCall, guardContext } from "./fixtures.js";

const call = (name: string, id = `id_${name}`): GuardCall => guardCall(name, id);
const ctx = (batch: GuardCall[]): GuardContext => guardContext(batch);
const check = (guard: ReturnType<typeof allowTools>, name: string) => guard(call(name), ctx([call(name)]));

describe("allowTools", () => {
  it("allows the listed tools and denies every other one, naming what is allowed", () => {
    const guard = allowTools(["search", "calculator"]);
    expect(check(guard, "search")).toEqual({ decision: "allow" });
    expect(check(guard, "calculator")).toEqual({ decision: "allow" });
    const verdict = check(guard, "delete_file");
    expect(verdict).toEqual({
      decision: "deny",
      reason: "delete_file is not one of the tools allowed here (search, calculator). Use one of those or answer without it.",
    });
  });

  it("uses a custom reason when given", () => {
    expect(check(allowTools(["search"], { reason: "read-only session" }), "write")).toEqual({ decision: "deny", reason: "read-only session" });
  });

  it("rejects bad options, naming the field", () => {
    expect(() => allowTools([])).toThrow(GuardOptionsError);
    expect(() => allowTools([])).toThrow(/allowTools: options\.names is invalid: list at least one tool name/);
    expect(() => allowTools(["ok", ""])).toThrow(/options\.names\.1 is invalid/);
    expect(() => allowTools("search" as unknown as string[])).toThrow(/options\.names/);
    expect(() => allowTools(["a"], { reason: "" })).toThrow(/options\.reason/);
  });
});

describe("denyTools", () => {
  it("denies the listed tools and allows the rest", () => {
    const guard = denyTools(["delete_file"]);
    expect(check(guard, "search")).toEqual({ decision: "allow" });
    expect(check(guard, "delete_file")).toEqual({
      decision: "deny",
      reason: "delete_file may not be used here. Use another tool or answer without it.",
    });
  });

  it("uses a custom reason and validates its options", () => {
    expect(check(denyTools(["rm"], { reason: "no deleting today" }), "rm")).toEqual({ decision: "deny", reason: "no deleting today" });
    expect(() => denyTools([])).toThrow(/denyTools: options\.names/);
    expect(() => denyTools(["rm"], { reasn: "typo" } as never)).toThrow(/denyTools: options has unknown key "reasn" \(known: names, reason\)/);
  });
});
