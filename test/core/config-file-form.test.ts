import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, expectTypeOf, it } from "vitest";
import type { z } from "zod";
import { CONFIG_FILE, ConfigError, JianmuConfigSchema, loadConfig, ReActConfig, readConfigFile, type JianmuFile, type ReActConfigInput } from "../../machines/contract/config.js";
import { snakeCase } from "../../machines/contract/config-file-form.js";

function fileWith(yaml: string): string {
  const path = join(mkdtempSync(join(tmpdir(), "jianmu-form-")), "jianmu.yaml");
  writeFileSync(path, yaml);
  return path;
}

function thrown(run: () => unknown): ConfigError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error("expected a ConfigError");
}

describe("one config schema: the jianmu.yaml form is derived from it", () => {
  it("a file name is the field's name in snake_case", () => {
    expect(["maxTokens", "baseURL", "apiKeyEnv", "initialDelayMs", "topP", "timeout"].map(snakeCase)).toEqual([
      "max_tokens",
      "base_url",
      "api_key_env",
      "initial_delay_ms",
      "top_p",
      "timeout",
    ]);
  });

  it("every field of the schema has one place in the file, and only the model is named otherwise", () => {
    const fields = Object.keys(JianmuConfigSchema.shape) as (keyof JianmuFile & string)[];
    const paths = fields.map((field) => CONFIG_FILE.pathOf(field));
    expect(CONFIG_FILE.filePaths().sort()).toEqual([...paths].sort());
    expect(new Set(paths).size).toBe(fields.length);
    for (const field of fields) {
      if (field === "model") expect(CONFIG_FILE.pathOf(field)).toBe("models.react");
      else expect(CONFIG_FILE.pathOf(field).split(".").pop(), field).toBe(snakeCase(field));
    }
    expect(CONFIG_FILE.pathOf("maxIterations")).toBe("limits.max_iterations");
    expect(CONFIG_FILE.pathOf("resilience")).toBe("resilience");
  });

  it("the types are the schema's: a file holds the schema's input, ReActConfig is its output", () => {
    expectTypeOf<JianmuFile>().toEqualTypeOf<z.input<typeof JianmuConfigSchema>>();
    expectTypeOf<ReActConfigInput>().toEqualTypeOf<z.input<typeof ReActConfig>>();
    expectTypeOf<ReActConfig>().toEqualTypeOf<z.output<typeof ReActConfig>>();
    expectTypeOf<keyof JianmuFile>().toEqualTypeOf<keyof ReActConfigInput | "baseURL" | "apiKeyEnv" | "stream" | "api" | "reasoning" | "store">();
  });

  it("nested settings are renamed key by key (fallbacks included); names of state fields and API parameters are kept", () => {
    const path = fileWith(`
resilience:
  max_retries: 1
  retry_on: [timeout]
  fallbacks:
    - { model: backup, base_url: "http://127.0.0.1:9/v1", api_key_env: BACKUP_KEY, api: chat }
  sticky: false
llm:
  api: responses
  reasoning: { effort: low, summary: auto }
react:
  keys: { finalAnswer: answer, usage: llm.usage }
  extra_params: { tool_choice: none, seed_value: 7 }
context: { max_tokens: 900, keep_last: 2 }
`);
    const config = loadConfig({}, { path });
    expect(config.resilience).toMatchObject({
      maxRetries: 1,
      retryOn: ["timeout"],
      sticky: false,
      fallbacks: [{ model: "backup", baseURL: "http://127.0.0.1:9/v1", apiKeyEnv: "BACKUP_KEY", api: "chat" }],
    });
    expect(readConfigFile({ path })?.file).toMatchObject({ api: "responses", reasoning: { effort: "low", summary: "auto" } });
    expect(config.keys).toEqual({ finalAnswer: "answer", usage: "llm.usage" });
    expect(config.extraParams).toEqual({ tool_choice: "none", seed_value: 7 });
    expect(config.context).toEqual({ maxTokens: 900, strategy: "trim", keepLast: 2 });
  });

  it("the endpoint settings are read from llm.* for whoever builds the model client, and are not ReActConfig fields", () => {
    const path = fileWith("llm:\n  base_url: http://127.0.0.1:8000/v1\n  api_key_env: MY_KEY\n  stream: false\n  temperature: 0.1\n");
    expect(readConfigFile({ path })?.file).toEqual({ baseURL: "http://127.0.0.1:8000/v1", apiKeyEnv: "MY_KEY", stream: false, temperature: 0.1 });
    const config = loadConfig({}, { path });
    expect(config.temperature).toBe(0.1);
    expect(config).not.toHaveProperty("baseURL");
    expect(config).not.toHaveProperty("stream");
    expect(thrown(() => loadConfig({ stream: false } as never, { path: false })).message).toMatch(/^config: stream = false is invalid: unknown field/);
  });
});

describe("removed and unknown settings name the field and the fix", () => {
  it("limits.max_rounds and models.default in a file: removed, with their replacement", () => {
    const rounds = thrown(() => loadConfig({}, { path: fileWith("limits:\n  max_rounds: 10\n") }));
    expect(rounds.message).toMatch(/jianmu\.yaml: limits\.max_rounds was removed: use limits\.max_iterations \(.+\)$/);
    expect(rounds.field).toBe("limits.max_rounds");
    expect(rounds.value).toBe(10);
    const model = thrown(() => loadConfig({}, { path: fileWith("models:\n  react: gpt-4o-mini\n  default: gpt-4o\n") }));
    expect(model.message).toMatch(/jianmu\.yaml: models\.default was removed: use models\.react \(.+\)$/);
  });

  it("the same fields in the options object: removed, with the option to use", () => {
    expect(thrown(() => loadConfig({ maxRounds: 3 } as never, { path: false })).message).toMatch(/^config: maxRounds was removed: use maxIterations \(.+\)$/);
    expect(thrown(() => loadConfig({ defaultModel: "gpt-4o" } as never, { path: false })).message).toMatch(/^config: defaultModel was removed: use model \(.+\)$/);
  });

  it("a setting spelled as in code gets the file's spelling; an unknown one is named with its path", () => {
    expect(thrown(() => loadConfig({}, { path: fileWith("llm:\n  maxTokens: 5\n") })).message).toMatch(/llm\.maxTokens = 5 is invalid: unknown field; jianmu\.yaml spells it llm\.max_tokens$/);
    expect(thrown(() => loadConfig({}, { path: fileWith("resilience:\n  maxRetries: 1\n") })).message).toMatch(
      /resilience\.maxRetries = 1 is invalid: unknown field; jianmu\.yaml spells it resilience\.max_retries$/,
    );
    expect(thrown(() => loadConfig({}, { path: fileWith("limitz:\n  max_iterations: 3\n") })).message).toMatch(/limitz = .* is invalid: unknown field; remove it or check its spelling/);
    expect(thrown(() => loadConfig({}, { path: fileWith("react:\n  keys: { bogus: x }\n") })).message).toMatch(/react\.keys\.bogus = "x" is invalid: unknown field/);
  });

  it("a key in a file is refused: the file names the variable that holds it", () => {
    const error = thrown(() => loadConfig({}, { path: fileWith("resilience:\n  fallbacks:\n    - { model: m, api_key: sk-123 }\n") }));
    expect(error.field).toBe("resilience.fallbacks.0.api_key");
    expect(error.message).toMatch(/keys do not belong in config files: name the variable that holds it with api_key_env/);
    // In code a fallback may carry its key.
    expect(loadConfig({ resilience: { fallbacks: [{ model: "m", apiKey: "sk-123" }] } }, { path: false }).resilience?.fallbacks[0]?.apiKey).toBe("sk-123");
  });

  it("a bad value deep in the file is named by its file path", () => {
    const error = thrown(() => loadConfig({}, { path: fileWith("resilience:\n  fallbacks:\n    - { base_url: not-a-url }\n") }));
    expect(error.field).toBe("resilience.fallbacks.0.base_url");
    expect(error.value).toBe("not-a-url");
    expect(thrown(() => loadConfig({}, { path: fileWith("context:\n  keep_last: 2\n") })).message).toMatch(/context\.max_tokens is required when context is set$/);
    expect(thrown(() => loadConfig({}, { path: fileWith("llm: 3\n") })).message).toMatch(/llm = 3 is invalid: must be a mapping of settings \(temperature, .*base_url/);
    expect(thrown(() => loadConfig({}, { path: fileWith("- a list\n") })).message).toMatch(/\(root\) = \["a list"\] is invalid: must be a mapping of sections \(models, llm, limits, pricing, resilience, react, context\)/);
  });

  it("an empty file is no settings", () => {
    expect(loadConfig({}, { path: fileWith("") })).toEqual(ReActConfig.parse({}));
  });
});
