import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CONFIG_FILE, JianmuConfigSchema, loadConfig, ReActConfig, readConfigFile, type JianmuFile } from "../../machines/contract/config.js";
import { snakeCase } from "../../machines/contract/config-file-form.js";
import { ROOT } from "../package/package-manifest.js";

/** The pages that document jianmu.yaml say what the code derives from the one schema. */

const read = (doc: string) => readFileSync(join(ROOT, doc), "utf8");
const DOCS = ["README.md", "examples/README.md", ...readdirSync(join(ROOT, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`)];
type Field = keyof JianmuFile & string;

function yamlBlocks(doc: string): string[] {
  return [...read(doc).matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

function loads(yaml: string): JianmuFile {
  const path = join(mkdtempSync(join(tmpdir(), "jianmu-doc-yaml-")), "jianmu.yaml");
  writeFileSync(path, yaml);
  loadConfig({}, { path });
  return readConfigFile({ path })!.file;
}

describe("jianmu.yaml in the docs", () => {
  it("the contract's table gives every ReActConfig field the file path the code derives", () => {
    const section = /## 3\. ReActConfig\n([\s\S]*?)\n## 4\./.exec(read("docs/contract.md"))![1]!;
    const rows = section.split("\n").filter((line) => line.startsWith("| `"));
    const covered: string[] = [];
    for (const row of rows) {
      const [fieldsCell, fileCell] = row.split("|").slice(1, 3).map((cell) => cell.trim());
      const fields = [...fieldsCell!.matchAll(/`(\w+)`/g)].map((m) => m[1]! as Field);
      const location = /`([\w.*]+)`/.exec(fileCell!)![1]!;
      for (const field of fields) {
        // "llm.*": the field's snake_case name in that section, as the contract says.
        const expected = location.endsWith(".*") ? `${location.slice(0, -1)}${snakeCase(field)}` : location;
        expect(CONFIG_FILE.pathOf(field), `${field} in docs/contract.md`).toBe(expected);
        covered.push(field);
      }
    }
    expect(covered.sort()).toEqual(Object.keys(ReActConfig.shape).sort());
    // The endpoint's settings are named there too.
    for (const field of ["baseURL", "apiKeyEnv", "stream"] as const) expect(section).toContain(`\`${CONFIG_FILE.pathOf(field)}\``);
  });

  it("the README's example file loads and shows every setting the schema has", () => {
    const [example] = yamlBlocks("README.md");
    expect(Object.keys(loads(example!)).sort()).toEqual(Object.keys(JianmuConfigSchema.shape).sort());
  });

  it("every jianmu.yaml example in the docs loads", () => {
    const blocks = DOCS.flatMap((doc) => yamlBlocks(doc).map((yaml) => ({ doc, yaml })));
    expect(blocks.length).toBeGreaterThan(1);
    for (const { doc, yaml } of blocks) expect(() => loads(yaml), doc).not.toThrow();
  });
});
