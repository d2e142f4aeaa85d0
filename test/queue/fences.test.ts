import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { FencedError } from "../../queue/errors.js";
import { Fences } from "../../queue/fences.js";

/*
 * A run this process gave up refuses its stopped actor's late writes for ten minutes after it was
 * given up, then is forgotten. Many runs retire in ten minutes (every finished run does), so
 * forgetting goes oldest first and stops at the first one still in its ten minutes.
 */
const MINUTE = 60_000;

describe("Fences: runs this process gave up", () => {
  beforeEach(() => {
    vi.useFakeTimers();
    vi.setSystemTime(0);
  });
  afterEach(() => vi.useRealTimers());

  const retire = (fences: Fences, runId: string) => {
    fences.fence(runId, 1, () => undefined);
    fences.unfence(runId);
  };

  it("refuses a given-up run's late write for ten minutes, then forgets it while later ones stay refused", () => {
    const fences = new Fences();
    retire(fences, "old");
    vi.setSystemTime(5 * MINUTE);
    for (let i = 0; i < 1_500; i++) retire(fences, `run-${i}`);
    expect(() => fences.forWrite("old")).toThrow(FencedError);
    vi.setSystemTime(10 * MINUTE + 1);
    retire(fences, "newest");
    expect(fences.forWrite("old")).toBeUndefined();
    expect(() => fences.forWrite("run-0")).toThrow(FencedError);
    expect(() => fences.forWrite("run-1499")).toThrow(FencedError);
    vi.setSystemTime(15 * MINUTE + 1);
    retire(fences, "later");
    expect(fences.forWrite("run-0")).toBeUndefined();
    expect(fences.forWrite("run-1499")).toBeUndefined();
    expect(() => fences.forWrite("newest")).toThrow(FencedError);
  });

  it("counts ten minutes from a run's last retirement when it was claimed and given up again", () => {
    const fences = new Fences();
    retire(fences, "again");
    retire(fences, "once");
    vi.setSystemTime(9 * MINUTE);
    retire(fences, "again");
    vi.setSystemTime(11 * MINUTE);
    retire(fences, "other");
    expect(fences.forWrite("once")).toBeUndefined();
    expect(() => fences.forWrite("again")).toThrow(FencedError);
    expect(fences.deliveredOf("again")).toBe(0);
  });

  it("lets a run claimed again write under its new fence", () => {
    const fences = new Fences();
    retire(fences, "run");
    fences.fence("run", 2, () => undefined);
    expect(fences.forWrite("run")).toMatchObject({ token: 2 });
  });
});

/*
 * A worker that lost a run may claim it again while a statement of the stopped copy is still on its
 * way (retried through a database restart, say). When that statement finds the token moved on, or
 * runs out of its lease, only the copy it came from is stopped: the new copy, under a new token, goes on.
 */
describe("Fences: a late failure of an earlier copy of the run", () => {
  const heldTwice = () => {
    const stopped: string[] = [];
    const fences = new Fences();
    fences.fence("run", 1, () => stopped.push("first copy"));
    fences.leased("run", 1, Date.now() + MINUTE);
    fences.unfence("run");
    fences.fence("run", 2, () => stopped.push("second copy"));
    fences.leased("run", 2, Date.now() + MINUTE);
    return { fences, stopped };
  };

  it("a write of the first copy found fenced off does not stop the second", () => {
    const { fences, stopped } = heldTwice();
    expect(fences.lost("run", 1)).toMatchObject({ token: 1 });
    expect(stopped).toEqual([]);
    expect(fences.forWrite("run")).toMatchObject({ token: 2 });
    expect(fences.leaseEnd("run", 2)).toBeGreaterThan(Date.now());
    fences.lost("run", 2);
    expect(stopped).toEqual(["second copy"]);
  });

  it("a statement of the first copy that outlived its lease does not give the second up", () => {
    const { fences, stopped } = heldTwice();
    fences.giveUp("run", 1, new Error("connection terminated"));
    expect(stopped).toEqual([]);
    expect(fences.forWrite("run")).toMatchObject({ token: 2 });
    fences.giveUp("run", 2, new Error("connection terminated"));
    expect(stopped).toEqual(["second copy"]);
    expect(() => fences.forWrite("run")).toThrow(FencedError);
  });
});
