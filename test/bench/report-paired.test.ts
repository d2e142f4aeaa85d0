import { describe, expect, it } from "vitest";
// @ts-expect-error: the bench is plain JavaScript (no declarations)
import { buildRows, pairedVerdict, winsNeeded } from "../../bench/report.mjs";

interface Row {
  measure: string;
  versusAiSdk?: string;
  resultText: string;
}

/** What a row prints for these repetitions (the scenarios' median, near enough for odd counts). */
const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;

/** The non-streaming throughput row for these runs/s, one entry per repetition (the median is what the row prints). */
function throughputRow(jianmu: number[], aisdk: number[]): Row {
  const floor = jianmu.map(() => 200);
  const of = (rates: number[]) => ({ runsPerSecond: median(rates), samples: rates.length, rates });
  const rows = buildRows({ throughputWhole: { concurrency: 100, floor: of(floor), jianmu: of(jianmu), aisdk: of(aisdk) } }, []) as Row[];
  return rows.find((r) => r.measure.startsWith("Throughput") && r.measure.includes("non-streaming"))!;
}

describe("bench report: latency and throughput against the AI SDK, repetition by repetition", () => {
  it("asks as many wins as a fair coin reaches at most 5% of the time", () => {
    // P(X >= 12 | n = 15) = 1.8%, P(X >= 11) = 5.9%; P(X >= 9 | n = 10) = 1.1%, P(X >= 8) = 5.5%;
    // P(X >= 59 | n = 100) = 4.4%, P(X >= 58) = 6.7%.
    expect(winsNeeded(100)).toBe(59);
    expect(winsNeeded(15)).toBe(12);
    expect(winsNeeded(10)).toBe(9);
    expect(winsNeeded(5)).toBe(5);
    // P(X >= 269 | n = 500) = 4.7%, P(X >= 268) = 5.6%; past n = 1000 the count still comes out
    // (2 ** n overflows there), a little over half as n grows.
    expect(winsNeeded(500)).toBe(269);
    expect(winsNeeded(2000)).toBe(1038);
    // Too few repetitions to rule chance out: never a verdict.
    expect(winsNeeded(4)).toBe(5);
  });

  it("is ahead or behind only when one was faster in enough paired repetitions", () => {
    const steady = Array.from({ length: 15 }, (_, i) => 100 + i);
    expect(pairedVerdict(steady.map((v) => v + 1), steady)).toEqual({ versusAiSdk: "ahead", wins: 15, n: 15 });
    expect(pairedVerdict(steady, steady.map((v) => v + 1))).toEqual({ versusAiSdk: "behind", wins: 0, n: 15 });
    const twelve = steady.map((v, i) => (i < 12 ? v + 1 : v - 1));
    expect(pairedVerdict(twelve, steady).versusAiSdk).toBe("ahead");
    const eleven = steady.map((v, i) => (i < 11 ? v + 1 : v - 1));
    expect(pairedVerdict(eleven, steady).versusAiSdk).toBe("level");
  });

  it("judges the row by the pairs, not by the two medians", () => {
    // jianmu's median is higher (its fast repetitions are fast), yet it was faster in only 8 of 15 pairs: level.
    const aisdk = Array.from({ length: 15 }, () => 100);
    const jianmu = aisdk.map((v, i) => (i < 8 ? v + 30 : v - 1));
    const row = throughputRow(jianmu, aisdk);
    expect(row.versusAiSdk).toBe("level");
    expect(row.resultText).toContain("better in 8 of 15 paired repetitions");
    expect(throughputRow(aisdk.map((v) => v + 1), aisdk).versusAiSdk).toBe("ahead");
  });

  it("judges latency by the pairs too, lower being better", () => {
    const latency = (jianmu: number[], aisdk: number[]) => {
      const of = (each: number[]) => ({ wallMs: median(each), cpuMs: median(each), samples: each.length, wallMsEach: each, cpuMsEach: each });
      const rows = buildRows({ latencyWhole: { floor: of(jianmu.map(() => 5)), jianmu: of(jianmu), aisdk: of(aisdk) } }, []) as Row[];
      return rows.filter((r) => r.measure.startsWith("Latency") && r.measure.includes("non-streaming") && !r.measure.includes("↳")).map((r) => r.versusAiSdk);
    };
    const aisdk = Array.from({ length: 100 }, (_, i) => 9 + (i % 7) / 10);
    // Faster in 60 of 100 repetitions: ahead, on wall and CPU time alike.
    expect(latency(aisdk.map((v, i) => (i < 60 ? v - 0.01 : v + 0.01)), aisdk)).toEqual(["ahead", "ahead"]);
    // Faster in 55: what chance does too often to count.
    expect(latency(aisdk.map((v, i) => (i < 55 ? v - 0.01 : v + 0.01)), aisdk)).toEqual(["level", "level"]);
    expect(latency(aisdk.map((v) => v + 0.5), aisdk)).toEqual(["behind", "behind"]);
  });
});
