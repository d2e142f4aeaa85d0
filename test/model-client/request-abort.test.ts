import { describe, expect, it } from "vitest";
import { RequestAbort } from "../../actors/openai/request-abort.js";

/* The handle stands in for an AbortSignal the SDK listens to; faults.test.ts aborts real requests with it. */
describe("RequestAbort", () => {
  it("calls each abort listener once, in the order added, and remembers the reason", () => {
    const handle = new RequestAbort();
    const calls: string[] = [];
    handle.addEventListener("abort", () => calls.push("sdk"));
    handle.addEventListener("abort", () => calls.push("second"));
    handle.abort("timeout");
    handle.abort("again");
    expect(calls).toEqual(["sdk", "second"]);
    expect(handle.aborted).toBe(true);
    expect(handle.reason).toBe("timeout");
  });

  it("does not call a removed listener, nor one for another event type", () => {
    const handle = new RequestAbort();
    const calls: string[] = [];
    const first = () => calls.push("first");
    const second = () => calls.push("second");
    handle.addEventListener("abort", first);
    handle.addEventListener("abort", second);
    handle.addEventListener("other", () => calls.push("other"));
    handle.removeEventListener("abort", first);
    handle.removeEventListener("abort", second);
    handle.abort();
    expect(calls).toEqual([]);
  });

  it("ignores a listener added after the abort, as an aborted AbortSignal does", () => {
    const handle = new RequestAbort();
    handle.abort();
    const calls: string[] = [];
    handle.addEventListener("abort", () => calls.push("late"));
    handle.abort();
    expect(calls).toEqual([]);
    expect(handle.asSignal().aborted).toBe(true);
  });
});
