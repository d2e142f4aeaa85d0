import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { COMMANDS } from "../../cli/help.js";
import { PendingApprovalSchema } from "../../machines/contract/approvals.js";
import { UnknownAgentsSchema } from "../../queue/schemas.js";
import { entryPoints, manifest, optionalPeers, ROOT } from "../package/package-manifest.js";

// Several real processes per test, on a machine the whole suite shares.
vi.setConfig({ testTimeout: 90_000, hookTimeout: 90_000 });

/**
 * The docs stay true: every API name they show is exported where they say it is, and every file
 * they cite exists. Driven by package.json's exports map, so new entry points are covered as they
 * are added.
 */

const DOCS = ["README.md", "examples/README.md", ...readdirSync(join(ROOT, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`)];
const read = (doc: string) => readFileSync(join(ROOT, doc), "utf8");

/** Names shown in inline code that are not jianmu exports and say so here: methods, locals, other packages. */
const NOT_EXPORTS: Record<string, string> = {
  actor: "a local: the actor a doc's example made",
  machine: "a local: the machine a doc's example made",
  store: "a local: a checkpoint store instance",
  handle: "a local: what checkpointAgent returned",
  main: "each example's own main()",
  connectModel: "the examples' helper in examples/support/endpoint.ts",
  repoPath: "the examples' helper in examples/support/paths.ts",
  runInMode: "the examples' test helper in examples/support/live.ts",
  process: "Node's process object",
  import: "the language's dynamic import()",
  max: "Math.max in prose",
  close: "a method (store.close(), recorder.close())",
  send: "a method (actor.send, adapter.send)",
  start: "a method (actor.start)",
  stop: "a method (actor.stop, inspector.stop)",
  write: "a method (stream.write)",
  getPersistedSnapshot: "an XState actor method",
  generateText: "the Vercel AI SDK, in the comparison table",
  respond: "the function a test gives startOpenAIServer",
  server: "a local: the server startOpenAIServer returned",
  toInput: "an option of agentTool: a function the user writes",
  toResult: "an option of agentTool: a function the user writes",
  prepareRound: "an option of createReactMachine: a function the user writes",
  initialize: "a method every ToolProvider implements",
  app: "a local: the user's own web app (Hono, Next.js)",
  handler: "a local: what agentHandler returned",
  resume: "a method of what useAgent returns",
  approve: "a method of what useAgent returns",
  worker: "a local: what startWorker returned",
  agents: "the function a worker's agents module exports (docs/scale.md)",
  hash: "a hash function in scale.md's sharding sketch",
  list: "a method (store.list())",
  connect: "a static method (PostgresRunStore.connect({ create: false }))",
};

const exported = new Map<string, Set<string>>();

/** The names an entry point exports: its runtime values and the names its declaration file exports. */
async function exportsOf(specifier: string, types: string): Promise<Set<string>> {
  const names = new Set(Object.keys((await import(specifier)) as object));
  const dts = readFileSync(join(ROOT, types), "utf8");
  for (const match of dts.matchAll(/export\s+(?:type\s+)?\{([^}]*)\}/g)) {
    for (const part of match[1]!.split(",")) {
      const name = part.trim().replace(/^type\s+/, "").split(/\s+as\s+/).pop()!.trim();
      if (name) names.add(name);
    }
  }
  for (const match of dts.matchAll(/export\s+(?:declare\s+)?(?:const|let|function|class|type|interface|enum)\s+([A-Za-z_$][\w$]*)/g)) names.add(match[1]!);
  return names;
}

beforeAll(async () => {
  for (const entry of entryPoints()) exported.set(entry.specifier, await exportsOf(entry.specifier, entry.types));
}, 60_000);

function codeBlocks(text: string): string[] {
  return [...text.matchAll(/```(?:ts|typescript|js|javascript|mjs)\n([\s\S]*?)```/g)].map((match) => match[1]!);
}

/** `import { a, type B, c as d } from "jianmu/x"` → [["jianmu/x", ["a", "B", "c"]]] */
function jianmuImports(code: string): [string, string[]][] {
  return [...code.matchAll(/import\s+(?:type\s+)?\{([^}]*)\}\s+from\s+["'](jianmu(?:\/[\w-]+)?)["']/g)].map((match) => [
    match[2]!,
    match[1]!
      .split(",")
      .map((part) => part.trim().replace(/^type\s+/, "").split(/\s+as\s+/)[0]!.trim())
      .filter(Boolean),
  ]);
}

/** Inline code shown as an API: a call (`name(...)`, `new Name(...)`, `Name.method(...)`) or a README table's first column. */
function inlineApiNames(doc: string, text: string): string[] {
  const prose = text.replace(/```[\s\S]*?```/g, "");
  const names = [...prose.matchAll(/`(?:new )?([A-Za-z_$][\w$]*)(?:\.[\w$]+)?\(/g)].map((match) => match[1]!);
  if (doc === "README.md") {
    for (const row of prose.matchAll(/^\| ([^|]+) \|/gm)) {
      for (const span of row[1]!.matchAll(/`([A-Za-z_$][\w$]*)`/g)) names.push(span[1]!);
    }
  }
  return [...new Set(names)];
}

describe("API names in the docs", () => {
  it("every name imported in a code block is exported by the entry point it is imported from", () => {
    const problems: string[] = [];
    let checked = 0;
    for (const doc of DOCS) {
      for (const code of codeBlocks(read(doc))) {
        for (const [specifier, names] of jianmuImports(code)) {
          const available = exported.get(specifier);
          if (!available) {
            problems.push(`${doc}: imports from "${specifier}", which package.json does not export`);
            continue;
          }
          for (const name of names) {
            checked++;
            if (!available.has(name)) problems.push(`${doc}: "${name}" is not exported by ${specifier}`);
          }
        }
      }
    }
    expect(checked).toBeGreaterThan(20);
    expect(problems).toEqual([]);
  });

  it("every API name shown inline is exported, and a doc naming an optional entry point's export names that entry point", async () => {
    const xstate = new Set(Object.keys(await import("xstate")));
    const problems: string[] = [];
    let checked = 0;
    for (const doc of DOCS) {
      const text = read(doc);
      for (const name of inlineApiNames(doc, text)) {
        if (name in NOT_EXPORTS || xstate.has(name)) continue;
        checked++;
        const homes = [...exported].filter(([, names]) => names.has(name)).map(([specifier]) => specifier);
        if (homes.length === 0) problems.push(`${doc}: \`${name}\` is not exported by any entry point (${[...exported.keys()].join(", ")})`);
        else if (!homes.includes("jianmu") && !homes.some((home) => text.includes(home))) problems.push(`${doc}: \`${name}\` comes from ${homes.join(" or ")}, which the page never names`);
      }
    }
    expect(checked).toBeGreaterThan(30);
    expect(problems).toEqual([]);
  });
});

describe("files the docs cite", () => {
  const tracked = new Set(execFileSync("git", ["ls-files"], { cwd: ROOT, encoding: "utf8" }).split("\n").filter(Boolean));
  const trackedNames = new Set([...tracked].map((file) => basename(file)));
  const exists = (doc: string, target: string) => {
    const clean = target.replace(/[#?].*$/, "").replace(/\/$/, "");
    return existsSync(join(ROOT, dirname(doc), clean)) || existsSync(join(ROOT, clean));
  };

  it("every link to a file points at one the repository has", () => {
    const problems: string[] = [];
    for (const doc of DOCS) {
      for (const match of read(doc).matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = match[1]!;
        if (/^(https?:|mailto:|#)/.test(target)) continue;
        if (!exists(doc, target)) problems.push(`${doc}: links to ${target}`);
      }
    }
    expect(problems).toEqual([]);
  });

  it("every file path in inline code exists (relative to the page or the repository root)", () => {
    const problems: string[] = [];
    for (const doc of DOCS) {
      const prose = read(doc).replace(/```[\s\S]*?```/g, "");
      for (const match of prose.matchAll(/`([^`\s]+)`/g)) {
        const span = match[1]!;
        // Not citations: URLs, import specifiers ("../index.js", "jianmu/testing"), files the user makes ("./jianmu.yaml"),
        // folders the tests write into (git-ignored, so absent until those tests have run).
        if (span.startsWith("test/artifacts/")) continue;
        if (/^(https?:|ws:|node_modules|\.|jianmu\/)/.test(span) || span.includes("*") || span.includes("<")) continue;
        const isPath = /^[\w.-]+(\/[\w.-]+)+\/?$/.test(span) && (/\.(ts|mjs|js|md|json|ya?ml|html)$/.test(span) || span.endsWith("/"));
        const isPage = /^[\w.-]+\.md$/.test(span);
        if (isPath && !exists(doc, span)) problems.push(`${doc}: cites ${span}`);
        if (isPage && !exists(doc, span) && !trackedNames.has(span)) problems.push(`${doc}: cites ${span}`);
      }
    }
    expect(problems).toEqual([]);
  });

  it("no page cites SPEC.md: the contract is docs/contract.md", () => {
    for (const doc of DOCS) expect(read(doc), doc).not.toMatch(/\bSPEC\.md\b/);
    expect(tracked.has("docs/contract.md")).toBe(true);
  });
});

describe("statements the docs make about the code", () => {
  it("README's tour says what npm run demo does: it builds dist/ first when the script does", () => {
    const demo = manifest.scripts?.["demo"] ?? "";
    const line = /^npm run demo\s+#(.*)$/m.exec(read("README.md"))?.[1] ?? "";
    expect(line).toContain("node dist/cli/main.js run");
    if (/npm run build/.test(demo)) expect(line).toMatch(/builds dist\//);
  });

  it("README's install section names every optional package, and what needs it", () => {
    const install = read("README.md").split("## Install")[1]!.split("\n## ")[0]!;
    for (const name of optionalPeers()) expect(install, name).toContain(`\`${name}\``);
  });

  it("README's runAgent row names every option runAgent takes", () => {
    const runner = readFileSync(join(ROOT, "machines", "runner.ts"), "utf8");
    const block = /export interface RunOptions \{([\s\S]*?)\n\}/.exec(runner)![1]!;
    const options = [...block.matchAll(/^ {2}(\w+)\?:/gm)].map((match) => match[1]!);
    expect(options.length).toBeGreaterThan(5);
    const row = /^\| `runAgent\(machine, input, \{([^}]*)\}\)` \|/m.exec(read("README.md"))?.[1] ?? "";
    expect(row.split(",").map((name) => name.trim()).sort()).toEqual([...options].sort());
  });

  it("guards.md lists the fields pendingApprovals() gives, by their names", () => {
    const listed = /`pendingApprovals\(snapshot\)` lists the waiting calls \(([^)]*)\)/.exec(read("docs/guards.md"))?.[1] ?? "";
    const names = [...listed.matchAll(/`(\w+)`/g)].map((match) => match[1]!);
    expect(names.sort()).toEqual(Object.keys(PendingApprovalSchema.shape).sort());
  });

  it("output.md's \"auto\" names the model it decides from as the code does: config.model, else the client's", () => {
    const build = readFileSync(join(ROOT, "machines", "chart", "build.ts"), "utf8");
    // The code: planOutput is given config.model, else the model client's own.
    expect(build).toMatch(/planOutput\([^)]*model: config\.model \?\? options\.modelClient\.model/);
    const output = read("docs/output.md");
    const row = /^\| `"auto"` \(default\) \|([^|]*)\|/m.exec(output)?.[1] ?? "";
    const decided = /"auto" is decided once, from([\s\S]*?), when the machine is made/.exec(output)?.[1] ?? "";
    for (const text of [row, decided]) expect(text).toMatch(/`config\.model`, else the (model the )?client/);
    // And the contract says which of the two wins when both are set.
    const modelRow = /^\| `model` \| `models\.react` \|([^\n]*)$/m.exec(read("docs/contract.md"))?.[1] ?? "";
    expect(modelRow).toMatch(/replaces the model the `ModelClient` was resolved with/);
  });

  it("README and scale.md say what a submit for an agent no worker has registered does, as the store's default does", () => {
    const fallback = UnknownAgentsSchema.parse(undefined);
    expect(fallback).toBe("queue");
    for (const page of [read("README.md").split("## Runs that outgrow one process")[1]!.split("\n## ")[0]!, read("docs/scale.md")]) {
      expect(page).toMatch(/no\s+worker\s+has\s+registered\s+yet\s+(waits\s+in\s+the\s+queue|is\s+\*\*queued\*\*)/);
      expect(page).toContain('`unknownAgents: "refuse"`');
      expect(page).not.toMatch(/takes\s+runs\s+only\s+for\s+agents\s+some\s+worker|start\s+a\s+worker\s+once\s+before\s+the\s+first\s+submit/);
    }
  });

  it("contract.md's entry-point table has every entry point of package.json's exports", () => {
    const section = read("docs/contract.md").split("## 1. Entry points")[1]!.split("\n## ")[0]!;
    const listed = [...section.matchAll(/^\| `(jianmu(?:\/[\w-]+)?)` \|/gm)].map((match) => match[1]!);
    expect(listed.sort()).toEqual(entryPoints().map((entry) => entry.specifier).sort());
    for (const command of COMMANDS.filter((name) => name !== "help")) expect(section, command).toContain(`\`${command}\``);
  });

  it("the files the README's tour writes in the checkout are ignored by git", () => {
    const tour = read("README.md").split("## A 60-second tour")[1]!.split("\n## ")[0]!;
    const written = [...tour.matchAll(/--record (\S+\.jsonl)/g)].map((match) => match[1]!);
    expect(written.length).toBeGreaterThan(0);
    for (const file of [...written, ...written.map((file) => file.replace(/\.jsonl$/, ".html"))]) {
      expect(execFileSync("git", ["check-ignore", file], { cwd: ROOT, encoding: "utf8" }).trim(), file).toBe(file);
    }
  });
});
