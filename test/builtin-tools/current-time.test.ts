import { describe, expect, it } from "vitest";
import type { Tool, ToolContext } from "../../tools/tool.js";
import { createCurrentTimeTool, currentTimeTool, type CurrentTimeResult } from "../../tools/builtin/current-time.js";

const ctx: ToolContext = { signal: new AbortController().signal, callId: "c1", state: {} };
const WINTER = new Date("2024-03-15T13:30:00.000Z");
const SUMMER = new Date("2024-07-01T22:15:30.000Z");

async function call(tool: Tool, args: unknown): Promise<CurrentTimeResult> {
  const check = tool.validate(args);
  if (!check.ok) throw new Error(check.error);
  return (await tool.execute(check.value, ctx)) as CurrentTimeResult;
}

// Some ICU versions put a narrow no-break space before AM/PM; the words are what matters.
const plainSpaces = (text: string) => text.replace(/\s/g, " ");

describe("current_time with a fixed clock", () => {
  const atWinter = createCurrentTimeTool({ now: () => WINTER, defaultTimeZone: "UTC" });
  const atSummer = createCurrentTimeTool({ now: () => SUMMER, defaultTimeZone: "UTC" });

  it("reports the instant, wall clock, offset and a readable form in the zone asked for", async () => {
    const result = await call(atWinter, { timezone: "Europe/Paris" });
    expect({ ...result, localTime: plainSpaces(result.localTime) }).toEqual({
      iso: "2024-03-15T13:30:00.000Z",
      timezone: "Europe/Paris",
      localIso: "2024-03-15T14:30:00+01:00",
      utcOffset: "+01:00",
      localTime: "Friday, March 15, 2024 at 2:30:00 PM GMT+1",
    });
  });

  it.each([
    [WINTER, "America/New_York", "2024-03-15T09:30:00-04:00", "-04:00"], // DST began on March 10
    [SUMMER, "Europe/Paris", "2024-07-02T00:15:30+02:00", "+02:00"], // summer time, and the next day
    [WINTER, "Asia/Kolkata", "2024-03-15T19:00:00+05:30", "+05:30"],
    [WINTER, "Asia/Kathmandu", "2024-03-15T19:15:00+05:45", "+05:45"],
    [WINTER, "Pacific/Kiritimati", "2024-03-16T03:30:00+14:00", "+14:00"],
    [SUMMER, "America/Los_Angeles", "2024-07-01T15:15:30-07:00", "-07:00"],
    [WINTER, "UTC", "2024-03-15T13:30:00+00:00", "+00:00"],
  ])("%s in %s is %s", async (date, timezone, localIso, utcOffset) => {
    const tool = date === WINTER ? atWinter : atSummer;
    const result = await call(tool, { timezone });
    expect(result.localIso).toBe(localIso);
    expect(result.utcOffset).toBe(utcOffset);
    expect(result.iso).toBe(date.toISOString());
  });

  it("keeps the zone name as asked, only fixing its capitalization", async () => {
    // Node's ICU would report Asia/Calcutta for Asia/Kolkata.
    expect((await call(atWinter, { timezone: "Asia/Kolkata" })).timezone).toBe("Asia/Kolkata");
    expect((await call(atWinter, { timezone: "europe/paris" })).timezone).toBe("Europe/Paris");
  });

  it("uses the configured default zone when none is given", async () => {
    const tool = createCurrentTimeTool({ now: () => WINTER, defaultTimeZone: "Asia/Tokyo" });
    const result = await call(tool, {});
    expect(result.timezone).toBe("Asia/Tokyo");
    expect(result.localIso).toBe("2024-03-15T22:30:00+09:00");
  });

  it("formats the readable time in the configured locale", async () => {
    const tool = createCurrentTimeTool({ now: () => WINTER, defaultTimeZone: "Europe/Paris", locale: "en-GB" });
    // Punctuation differs between ICU versions ("Friday 15" vs "Friday, 15"); day-month order and the 24-hour clock do not.
    expect(plainSpaces((await call(tool, {})).localTime)).toMatch(/^Friday,? 15 March 2024 at 14:30:00 CET$/);
  });

  it("rejects an unknown zone with examples the model can use", async () => {
    await expect(call(atWinter, { timezone: "Mars/Olympus_Mons" })).rejects.toThrow(
      'unknown time zone "Mars/Olympus_Mons": use an IANA zone name such as "Europe/Paris", "America/New_York", "Asia/Tokyo" or "UTC"',
    );
  });

  it("rejects an empty zone at validation", () => {
    expect(atWinter.validate({ timezone: "" })).toMatchObject({ ok: false, error: expect.stringContaining("timezone") });
  });

  it("refuses a bad default zone when the tool is created", () => {
    expect(() => createCurrentTimeTool({ defaultTimeZone: "Nowhere/Special" })).toThrow('unknown time zone "Nowhere/Special"');
  });

  it("reports a clock that returns an invalid date", async () => {
    const broken = createCurrentTimeTool({ now: () => new Date(Number.NaN), defaultTimeZone: "UTC" });
    await expect(call(broken, {})).rejects.toThrow("the clock returned an invalid date");
  });
});

describe("currentTimeTool (the default instance)", () => {
  it("is read-only and parallel-safe", () => {
    expect(currentTimeTool.name).toBe("current_time");
    expect(currentTimeTool.parallelSafe).toBe(true);
    expect(currentTimeTool.effectTags).toEqual([]);
  });

  it("reads the real clock", async () => {
    const before = Date.now();
    const result = await call(currentTimeTool, { timezone: "UTC" });
    const reported = Date.parse(result.iso);
    expect(reported).toBeGreaterThanOrEqual(before);
    expect(reported).toBeLessThanOrEqual(Date.now());
  });

  it("has a description that does not depend on the machine's zone", () => {
    expect(currentTimeTool.description).not.toMatch(/[A-Z][a-z]+\/[A-Z]/);
    expect(createCurrentTimeTool({ defaultTimeZone: "Asia/Tokyo" }).description).toBe(currentTimeTool.description);
  });
});
