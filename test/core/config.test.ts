import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig, ReActConfig } from "../../machines/contract/config.js";

function dirWith(yaml: string): string {
  const dir = mkdtempSync(join(tmpdir(), "jianmu-config-"));
  writeFileSync(join(dir, "jianmu.yaml"), yaml);
  return dir;
}

describe("ReActConfig and loadConfig", () => {
  it("has built-in defaults: maxIterations 10, auto tool execution, no budget", () => {
    const config = loadConfig({}, { cwd: mkdtempSync(join(tmpdir(), "jianmu-empty-")), env: {} });
    expect(config).toEqual(ReActConfig.parse({}));
    expect(config.maxIterations).toBe(10);
    expect(config.toolExecution).toBe("auto");
    expect(config.maxBudgetTokens).toBeUndefined();
    expect(config.extraParams).toEqual({});
  });

  it("reads jianmu.yaml from the working directory, mapping its sections onto the config", () => {
    const cwd = dirWith(`
models:
  react: gpt-4o-mini
llm:
  temperature: 0.2
  max_tokens: 512
  top_p: 0.8
  timeout: 30
  max_budget_tokens: 32000
limits:
  max_iterations: 15
react:
  system_prompt: You are a research assistant.
  tool_choice: required
  tool_execution: serial
resilience:
  max_retries: 4
  fallbacks:
    - model: gpt-4o
      api_key_env: BACKUP_KEY
`);
    const config = loadConfig({}, { cwd, env: {} });
    expect(config).toMatchObject({
      model: "gpt-4o-mini",
      temperature: 0.2,
      maxTokens: 512,
      topP: 0.8,
      timeout: 30,
      maxBudgetTokens: 32000,
      maxIterations: 15,
      systemPrompt: "You are a research assistant.",
      toolChoice: "required",
      toolExecution: "serial",
      resilience: { maxRetries: 4, fallbacks: [{ model: "gpt-4o", apiKeyEnv: "BACKUP_KEY" }], initialDelayMs: 500 },
    });
  });

  it("values given in code win over the file", () => {
    const cwd = dirWith("limits:\n  max_iterations: 15\nmodels:\n  react: from-file\n");
    expect(loadConfig({ maxIterations: 3 }, { cwd, env: {} })).toMatchObject({ maxIterations: 3, model: "from-file" });
  });

  it("JIANMU_CONFIG points at another file", () => {
    const dir = dirWith("models:\n  react: via-env\n");
    const config = loadConfig({}, { cwd: mkdtempSync(join(tmpdir(), "jianmu-other-")), env: { JIANMU_CONFIG: join(dir, "jianmu.yaml") } });
    expect(config.model).toBe("via-env");
  });

  it("a bad value names the field, the value and the file", () => {
    const cwd = dirWith("llm:\n  temperature: hot\n");
    let error: unknown;
    try {
      loadConfig({}, { cwd, env: {} });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const configError = error as ConfigError;
    expect(configError.field).toBe("llm.temperature");
    expect(configError.value).toBe("hot");
    expect(configError.source).toBe(join(cwd, "jianmu.yaml"));
    expect(configError.message).toMatch(/jianmu\.yaml: llm\.temperature = "hot" is invalid: .*number/);
  });

  it("an unknown field is reported with its path", () => {
    const cwd = dirWith("llm:\n  temprature: 0.5\n");
    expect(() => loadConfig({}, { cwd, env: {} })).toThrow(/llm\.temprature = 0\.5 is invalid: unknown field; remove it or check its spelling/);
  });

  it("out-of-range values and broken YAML are errors too", () => {
    expect(() => loadConfig({}, { cwd: dirWith("limits:\n  max_iterations: 0\n"), env: {} })).toThrow(/limits\.max_iterations = 0 is invalid/);
    expect(() => loadConfig({}, { cwd: dirWith("llm: [unclosed\n"), env: {} })).toThrow(/jianmu\.yaml: not valid YAML: /);
    expect(() => loadConfig({}, { env: { JIANMU_CONFIG: "/nonexistent/jianmu.yaml" } })).toThrow(/JIANMU_CONFIG: path = "\/nonexistent\/jianmu.yaml" is invalid: no such file/);
  });

  it("a YAML syntax error is said as the parser says it, where it is, without a field", () => {
    for (const [yaml, problem] of [
      ["limits:\n  max_iterations: [1,\n", /^Flow sequence .* at line 3, column 1$/],
      ["limits:\n\tmax_iterations: 3\n", /at line 2, column 1$/],
      ["limits:\n  max_iterations: 3\nlimits:\n  max_iterations: 4\n", /^Map keys must be unique at line 3, column 1$/],
    ] as const) {
      const cwd = dirWith(yaml);
      let message = "";
      try {
        loadConfig({}, { cwd, env: {} });
      } catch (error) {
        message = (error as ConfigError).message;
      }
      expect(message.startsWith(`${join(cwd, "jianmu.yaml")}: not valid YAML: `), message).toBe(true);
      expect(message.slice(`${join(cwd, "jianmu.yaml")}: not valid YAML: `.length)).toMatch(problem);
      expect(message).not.toMatch(/\(file\)|\(missing\)|\n/);
    }
  });

  it("a block missing a required field says so, and names the block's other problems too", () => {
    const cwd = dirWith("context:\n  strategy: squash\n");
    expect(() => loadConfig({}, { cwd, env: {} })).toThrow(
      new RegExp(`^${join(cwd, "jianmu.yaml").replace(/[.]/g, "\\.")}: context\\.max_tokens is required when context is set; and context\\.strategy = "squash" is invalid: .*"trim".*"summarize"`),
    );
  });

  it("a bad value given in code names the field", () => {
    expect(() => loadConfig({ temperature: 5 }, { cwd: mkdtempSync(join(tmpdir(), "jianmu-empty-")), env: {} })).toThrow(/config: temperature = 5 is invalid/);
    expect(() => loadConfig({ keys: { messages: "not a path!" } }, { cwd: mkdtempSync(join(tmpdir(), "jianmu-empty-")), env: {} })).toThrow(
      /keys\.messages = "not a path!" is invalid: must be a field name or dotted path/,
    );
  });
});
