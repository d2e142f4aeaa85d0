/**
 * `current_time`: models do not know what time it is. Read-only, so parallel-safe. The clock and
 * the default zone are injectable so that tests (and recorded demos) are deterministic.
 */
import { z } from "zod";
import { defineTool, type Tool } from "../tool.js";

export interface CurrentTimeOptions {
  /** The clock; defaults to `new Date()`. */
  now?: () => Date;
  /** Zone used when the model gives none; defaults to the system's zone. */
  defaultTimeZone?: string;
  /** Locale of the human-readable `localTime`; defaults to "en-US". */
  locale?: string;
}

export interface CurrentTimeResult {
  /** The instant in UTC, e.g. "2024-03-15T13:30:00.000Z". */
  iso: string;
  /** The zone as asked for (capitalization fixed), e.g. "Europe/Paris". */
  timezone: string;
  /** Wall-clock time in that zone with its offset, e.g. "2024-03-15T14:30:00+01:00". */
  localIso: string;
  /** e.g. "+01:00". */
  utcOffset: string;
  /** e.g. "Friday, March 15, 2024 at 2:30:00 PM GMT+1". */
  localTime: string;
}

const ZONE_EXAMPLES = '"Europe/Paris", "America/New_York", "Asia/Tokyo" or "UTC"';

/**
 * Intl is the authority on zone names; its RangeError becomes a message the model can act on.
 * The name is returned as given, only with Intl's capitalization when that is all that differs
 * ("europe/paris" → "Europe/Paris"): Node's ICU "canonicalizes" Asia/Kolkata to Asia/Calcutta
 * and EST to America/Panama, which would confuse whoever asked.
 */
function checkedTimeZone(timeZone: string): string {
  let resolved: string;
  try {
    resolved = new Intl.DateTimeFormat("en-US", { timeZone }).resolvedOptions().timeZone;
  } catch {
    throw new Error(`unknown time zone "${timeZone}": use an IANA zone name such as ${ZONE_EXAMPLES}`);
  }
  return resolved.toLowerCase() === timeZone.toLowerCase() ? resolved : timeZone;
}

const pad = (value: number, width = 2): string => String(value).padStart(width, "0");

/** The wall-clock fields of `date` in `timeZone`, read with Intl (the only zone database we have). */
function wallClock(date: Date, timeZone: string): { year: number; month: number; day: number; hour: number; minute: number; second: number } {
  const parts = new Intl.DateTimeFormat("en-US", {
    timeZone,
    hourCycle: "h23",
    year: "numeric",
    month: "numeric",
    day: "numeric",
    hour: "numeric",
    minute: "numeric",
    second: "numeric",
  }).formatToParts(date);
  const field = (type: Intl.DateTimeFormatPartTypes): number => Number(parts.find((part) => part.type === type)?.value);
  return { year: field("year"), month: field("month"), day: field("day"), hour: field("hour"), minute: field("minute"), second: field("second") };
}

export function describeTime(date: Date, timeZone: string, locale = "en-US"): CurrentTimeResult {
  const zone = checkedTimeZone(timeZone);
  const wall = wallClock(date, zone);
  // The offset is how far the zone's wall clock is ahead of UTC at this instant (DST included).
  const wallAsUtc = Date.UTC(wall.year, wall.month - 1, wall.day, wall.hour, wall.minute, wall.second);
  const instant = Math.floor(date.getTime() / 1000) * 1000;
  const offsetMinutes = Math.round((wallAsUtc - instant) / 60_000);
  const sign = offsetMinutes < 0 ? "-" : "+";
  const utcOffset = `${sign}${pad(Math.floor(Math.abs(offsetMinutes) / 60))}:${pad(Math.abs(offsetMinutes) % 60)}`;
  const localIso =
    `${pad(wall.year, 4)}-${pad(wall.month)}-${pad(wall.day)}` +
    `T${pad(wall.hour)}:${pad(wall.minute)}:${pad(wall.second)}${utcOffset}`;
  const localTime = new Intl.DateTimeFormat(locale, { timeZone: zone, dateStyle: "full", timeStyle: "long" }).format(date);
  return { iso: date.toISOString(), timezone: zone, localIso, utcOffset, localTime };
}

export function createCurrentTimeTool(options: CurrentTimeOptions = {}): Tool {
  const now = options.now ?? (() => new Date());
  const locale = options.locale ?? "en-US";
  // A configured zone is checked now, so that a bad configuration fails at startup rather than at
  // the model's first call. The system's zone needs no check (Intl itself names it), and is read on
  // the first call: the first Intl.DateTimeFormat loads the zone data, which `currentTimeTool`
  // (built on `import "jianmu"`) would otherwise pay for in every app's start-up.
  const configuredZone = options.defaultTimeZone === undefined ? undefined : checkedTimeZone(options.defaultTimeZone);
  let systemZone: string | undefined;
  const defaultTimeZone = (): string => configuredZone ?? (systemZone ??= checkedTimeZone(new Intl.DateTimeFormat().resolvedOptions().timeZone));
  return defineTool({
    name: "current_time",
    // The description stays the same on every machine (no zone in it): recorded runs replay their
    // requests, and a description that varied with the host would make them differ.
    description:
      "Get the current date and time: the UTC instant, and the wall-clock time, UTC offset and a readable form in a time zone. " +
      "Without a timezone, uses the local time zone of the machine running the agent.",
    parameters: z.object({
      timezone: z
        .string()
        .min(1)
        .max(100)
        .optional()
        .describe(`IANA time zone name, e.g. ${ZONE_EXAMPLES}`),
    }),
    parallelSafe: true,
    effectTags: [],
    execute({ timezone }): CurrentTimeResult {
      const date = now();
      if (Number.isNaN(date.getTime())) throw new Error("the clock returned an invalid date");
      return describeTime(date, timezone ?? defaultTimeZone(), locale);
    },
  });
}

/** Real clock, system zone. */
export const currentTimeTool: Tool = createCurrentTimeTool();
