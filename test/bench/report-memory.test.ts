import { describe, expect, it } from "vitest";
// @ts-expect-error: the bench is plain JavaScript (no declarations)
import { buildRows } from "../../bench/report.mjs";

interface Row {
  measure: string;
  versusAiSdk?: string;
}

type Rep = { agents: number; heapPerAgent: number; rssPerAgent: number; heapAfterHeldPerRun: number };

/** The memory rows for these repetitions of the heap left after the held runs (the other figures fixed apart). */
function memoryRows(jianmuAfter: number[], aisdkAfter: number[]): Row[] {
  const reps = (after: number[], heap: number): Rep[] => after.map((heapAfterHeldPerRun) => ({ agents: 1000, heapPerAgent: heap, rssPerAgent: heap * 1.5, heapAfterHeldPerRun }));
  return buildRows({ memory: { floor: reps([11_500, 11_600, 11_700], 42_000), jianmu: reps(jianmuAfter, 58_000), aisdk: reps(aisdkAfter, 143_000) } }, []) as Row[];
}

const verdictOf = (rows: Row[], start: string) => rows.find((r) => r.measure.startsWith(start))!.versusAiSdk;

describe("bench report: memory rows against the AI SDK", () => {
  it("calls two medians level when they are closer than either library's own repetitions", () => {
    // The run of 2026-12-05: jianmu's median 11 947 B against 11 150 B, the AI SDK's repetitions 953 B apart.
    expect(verdictOf(memoryRows([11_947, 11_932, 12_192], [10_384, 11_336, 11_150]), "Heap left after")).toBe("level");
  });

  it("still calls a difference past both spreads ahead or behind", () => {
    expect(verdictOf(memoryRows([11_900, 11_950, 12_000], [10_000, 10_050, 10_100]), "Heap left after")).toBe("behind");
    expect(verdictOf(memoryRows([10_000, 10_050, 10_100], [11_900, 11_950, 12_000]), "Heap left after")).toBe("ahead");
    // Heap and RSS per held agent: far apart, so the spreads change nothing.
    const rows = memoryRows([11_900, 11_950, 12_000], [10_000, 10_050, 10_100]);
    expect(verdictOf(rows, "Heap per in-flight agent")).toBe("ahead");
    expect(verdictOf(rows, "RSS per in-flight agent")).toBe("ahead");
  });
});
