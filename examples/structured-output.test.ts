import { describe, expect, it } from "vitest";
import { Forecast, main } from "./structured-output.js";

describe("examples/structured-output", () => {
  it("rejects the mistyped temperature, then returns a validated, typed forecast", async () => {
    const lines: string[] = [];
    const output = await main({ mode: "offline", log: (line) => lines.push(line) });

    expect(output.status).toBe("succeeded");
    expect(Forecast.parse(output.output)).toEqual({ city: "Bergen", temperatureC: 7, conditions: "rain", advice: "Take an umbrella." });
    expect(output.rounds).toBe(3);
    expect(lines.some((line) => /rejected final output \(1\): .*temperatureC/.test(line))).toBe(true);
    expect(lines.at(-1)).toBe("Bergen: 7°C, rain. Take an umbrella.");
  });
});
