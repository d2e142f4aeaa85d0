import { describe, expect, it } from "vitest";
// @ts-expect-error: the bench is plain JavaScript (no declarations)
import { buildRows, RETAINED_NOISE_BYTES } from "../../bench/report.mjs";

interface Row {
  measure: string;
  versusAiSdk?: string;
}

/** The retention row for these slopes (bytes retained per finished run, one repetition each). */
function retentionRow(floor: number, jianmu: number, aisdk: number): Row {
  const rep = (retainedPerRun: number) => [{ retainedPerRun, runs: 1800 }];
  const rows = buildRows({ retention: { floor: rep(floor), jianmu: rep(jianmu), aisdk: rep(aisdk) } }, []) as Row[];
  return rows.find((r) => r.measure.startsWith("Heap retained per finished run"))!;
}

describe("bench report: heap retained per finished run against the AI SDK", () => {
  it("calls two slopes within the slope's own jitter level, whichever is lower", () => {
    expect(retentionRow(-5, -11, -33).versusAiSdk).toBe("level");
    expect(retentionRow(-5, -33, -11).versusAiSdk).toBe("level");
    expect(retentionRow(0, 10, 10 - RETAINED_NOISE_BYTES).versusAiSdk).toBe("level");
  });

  it("calls a difference past the jitter ahead or behind, by the figures themselves (lower is better)", () => {
    expect(retentionRow(0, 5, 5 + RETAINED_NOISE_BYTES + 1).versusAiSdk).toBe("ahead");
    expect(retentionRow(0, 400, 20).versusAiSdk).toBe("behind");
  });

  it("widens level to the spread of this run's own repetitions when they landed further apart than 32 B", () => {
    const reps = (...slopes: number[]) => slopes.map((retainedPerRun) => ({ retainedPerRun, runs: 1800 }));
    const verdict = (jianmu: number[], aisdk: number[]) =>
      (buildRows({ retention: { floor: reps(37, 37), jianmu: reps(...jianmu), aisdk: reps(...aisdk) } }, []) as Row[]).find((r) => r.measure.startsWith("Heap retained per finished run"))!.versusAiSdk;
    // The AI SDK's two repetitions 94 B apart (-35 and 59): jianmu's 46 against its median 12 is within that.
    expect(verdict([51, 42], [-35, 59])).toBe("level");
    // Tight repetitions on both sides: the same 34 B difference is past the jitter.
    expect(verdict([47, 45], [11, 13])).toBe("behind");
  });
});
