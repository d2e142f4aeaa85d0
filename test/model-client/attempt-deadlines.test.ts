import { describe, expect, it } from "vitest";
import { startDeadline } from "../../actors/openai/attempt-deadlines.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/* Attempts share one timer per limit; faults.test.ts ("timeouts") checks them on real requests. */
describe("attempt deadlines", () => {
  it("expire in the order they started, not before their limit, and never once cancelled", async () => {
    const fired: string[] = [];
    const started = performance.now();
    const firstAt: number[] = [];
    startDeadline(40, () => {
      fired.push("first");
      firstAt.push(performance.now() - started);
    });
    const cancelled = startDeadline(40, () => fired.push("cancelled"));
    await sleep(15);
    startDeadline(40, () => fired.push("third"));
    cancelled.cancel();
    cancelled.cancel();
    await sleep(30);
    expect(fired).toEqual(["first"]);
    expect(firstAt[0]).toBeGreaterThanOrEqual(39);
    await sleep(40);
    expect(fired).toEqual(["first", "third"]);
  });

  it("keeps limits apart: a short one is not held up by a long one", async () => {
    const fired: string[] = [];
    const long = startDeadline(60_000, () => fired.push("long"));
    startDeadline(20, () => fired.push("short"));
    await sleep(50);
    expect(fired).toEqual(["short"]);
    long.cancel();
  });

  it("a callback that throws does not stop the others", async () => {
    const fired: string[] = [];
    const errors: unknown[] = [];
    const onError = (error: unknown) => errors.push(error);
    const listeners = process.listeners("uncaughtException");
    process.removeAllListeners("uncaughtException");
    process.on("uncaughtException", onError);
    try {
      startDeadline(25, () => {
        throw new Error("listener failed");
      });
      startDeadline(25, () => fired.push("second"));
      await sleep(60);
    } finally {
      process.off("uncaughtException", onError);
      for (const listener of listeners) process.on("uncaughtException", listener);
    }
    expect(fired).toEqual(["second"]);
    expect(errors).toHaveLength(1);
  });
});
