import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../machines/contract/config.js";

function dirWith(yaml: string): string {
  const dir = mkdtempSync(join(tmpdir(), "jianmu-config-"));
  writeFileSync(join(dir, "jianmu.yaml"), yaml);
  return dir;
}

describe("config: output and context settings", () => {
  it("defaults: outputStrategy auto, two output retries, no context limit", () => {
    const config = loadConfig({}, { path: false });
    expect(config.outputStrategy).toBe("auto");
    expect(config.outputRetries).toBe(2);
    expect(config.context).toBeUndefined();
    expect(loadConfig({ context: { maxTokens: 8_000 } }, { path: false }).context).toEqual({ maxTokens: 8_000, strategy: "trim", keepLast: 4 });
  });

  it("reads them from jianmu.yaml (react.output_strategy, react.output_retries, context.*), code overrides win", () => {
    const cwd = dirWith(["react:", "  output_strategy: native", "  output_retries: 5", "context:", "  max_tokens: 12000", "  strategy: summarize", "  keep_last: 8", ""].join("\n"));
    const config = loadConfig({}, { cwd, env: {} });
    expect(config.outputStrategy).toBe("native");
    expect(config.outputRetries).toBe(5);
    expect(config.context).toEqual({ maxTokens: 12_000, strategy: "summarize", keepLast: 8 });
    expect(loadConfig({ outputRetries: 0 }, { cwd, env: {} }).outputRetries).toBe(0);
  });

  it("names the bad field, in code and in the file", () => {
    expect(() => loadConfig({ context: { maxTokens: 0 } }, { path: false })).toThrow(/config: context\.maxTokens = 0 is invalid/);
    expect(() => loadConfig({ context: { maxTokens: 100, strategy: "drop" as "trim" } }, { path: false })).toThrow(/context\.strategy = "drop" is invalid/);
    expect(() => loadConfig({ outputStrategy: "json" as "tool" }, { path: false })).toThrow(ConfigError);
    const cwd = dirWith(["context:", "  max_tokens: 1000", "  keep: 3", ""].join("\n"));
    expect(() => loadConfig({}, { cwd, env: {} })).toThrow(/context\.keep = 3 is invalid: unknown field/);
  });
});
