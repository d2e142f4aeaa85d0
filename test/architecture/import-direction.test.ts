import { dirname, join, normalize } from "node:path/posix";
import {
  isCallExpression,
  isExportDeclaration,
  isImportDeclaration,
  isImportTypeNode,
  isLiteralTypeNode,
  isStringLiteral,
  type Node,
  type SourceFile,
} from "typescript/unstable/ast";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { forEachNode, lineOf, openLibrary, SyntaxKind, type LibraryFile } from "./library-source.js";

/**
 * Imports flow one way, from the top of this list to the bottom and never back: a module may import
 * its own layer's modules and any layer below it, never one above, nor a sibling on the same level
 * (siblings do not know each other). Each layer is a folder (or one file); every file of the library
 * must fall in exactly one, so a new folder has to be placed here before it can ship.
 *
 * What counts as an import: `import`, `export ... from`, `import()` and `import("...")` types.
 * Type-only imports (`import type`, `typeof import(...)`) count like value imports: a type names the
 * module it comes from, and the declaration files tsc writes import that module, so a lower layer
 * that names a higher layer's type depends on it all the same (and could not be published or read
 * without it). A dynamic `import()` counts too; the only upward ones are the lazy loads listed in
 * `LAZY_UPWARD`, each with its reason.
 */
const LAYERS: readonly (readonly string[])[] = [
  // The base: tools and their providers, knowing nothing of XState.
  ["tools/"],
  // The work the machine invokes, as XState actor logic.
  ["actors/"],
  // The contract: state schema, context, config, events, emitted table, termination, persisted shapes.
  ["machines/contract/"],
  // The chart's pieces and their pure context updates.
  ["machines/chart/"],
  // createReactMachine: wires the pieces into the chart.
  ["machines/react-machine.ts"],
  // What is built on a machine: agents as tools and handoffs; snapshots and checkpoint stores; runAgent's approver.
  ["machines/composition/", "machines/persistence/", "machines/approver.ts"],
  // runAgent: one run to its end (restores, checkpoints, traces).
  ["machines/runner.ts"],
  // What uses the machines, each on its own.
  ["otel/", "visualize/", "queue/", "testing/"],
  // Agents in web apps (its live page reuses the viewer's chart).
  ["web/"],
  // The public entry points (package.json exports), one file each at the root.
  ["*.ts"],
  // The jianmu command: an application of the library, free to use its entry points.
  ["cli/"],
];

/** Upward dynamic imports: loaded on first use, from a layer below the module they load. */
const LAZY_UPWARD: Record<string, string> = {
  "machines/runner.ts -> otel/trace-agent.ts":
    "runAgent({ tracer }) loads tracing on first use so that `import \"jianmu\"` never loads OpenTelemetry; otel builds on the machines, so a static import would be a cycle",
};

/** The layer of a library file: its index in LAYERS and the group it matched. */
function layerOf(path: string): { level: number; group: string } | undefined {
  for (const [level, groups] of LAYERS.entries()) {
    for (const group of groups) {
      const matches = group === "*.ts" ? !path.includes("/") : group.endsWith("/") ? path.startsWith(group) : path === group;
      if (matches) return { level, group };
    }
  }
  return undefined;
}

interface Import {
  from: string;
  to: string;
  line: number;
  kind: "value" | "type" | "dynamic";
}

const literalText = (node: Node | undefined): string | undefined => (node && isStringLiteral(node) ? node.text : undefined);

/** Every relative module a file imports, resolved to a library path (`.js` specifiers name the `.ts` file). */
function importsOf(file: LibraryFile): Import[] {
  const found: Import[] = [];
  const add = (source: SourceFile, node: Node, specifier: string | undefined, kind: Import["kind"]) => {
    if (specifier === undefined || !specifier.startsWith(".")) return;
    const resolved = normalize(join(dirname(file.path), specifier)).replace(/\.js$/, ".ts").replace(/\.jsx$/, ".tsx");
    found.push({ from: file.path, to: resolved, line: lineOf(source, node.getStart(source)), kind });
  };
  forEachNode(file.source, (node) => {
    if (isImportDeclaration(node)) {
      add(file.source, node, literalText(node.moduleSpecifier), node.importClause?.phaseModifier === SyntaxKind.TypeKeyword ? "type" : "value");
    } else if (isExportDeclaration(node)) {
      add(file.source, node, literalText(node.moduleSpecifier), node.isTypeOnly ? "type" : "value");
    } else if (isCallExpression(node) && node.expression.kind === SyntaxKind.ImportKeyword) {
      add(file.source, node, literalText(node.arguments[0]), "dynamic");
    } else if (isImportTypeNode(node) && isLiteralTypeNode(node.argument)) {
      add(file.source, node, literalText(node.argument.literal), "type");
    }
  });
  return found;
}

/** The imports against the flow, and the allowed lazy loads that were seen. */
function check(imports: readonly Import[]): { wrong: string[]; lazyUsed: string[] } {
  const wrong: string[] = [];
  const lazyUsed = new Set<string>();
  for (const imp of imports) {
    const from = layerOf(imp.from)!;
    const to = layerOf(imp.to);
    if (!to) {
      wrong.push(`${imp.from}:${imp.line} imports ${imp.to}, which is not library source`);
      continue;
    }
    if (to.group === from.group || to.level < from.level) continue;
    const edge = `${imp.from} -> ${imp.to}`;
    if (imp.kind === "dynamic" && LAZY_UPWARD[edge] !== undefined) {
      lazyUsed.add(edge);
      continue;
    }
    const where = to.level === from.level ? "a sibling on its level" : "a layer above";
    wrong.push(`${imp.from}:${imp.line} (${from.group}) imports ${imp.to} (${to.group}), ${where} [${imp.kind}]`);
  }
  return { wrong, lazyUsed: [...lazyUsed] };
}

let library: ReturnType<typeof openLibrary>;
beforeAll(() => {
  library = openLibrary();
});
afterAll(() => library?.close());

describe("imports flow one way", () => {
  it("reads the library's source (the check below has something to check)", () => {
    const paths = library.files.map((f) => f.path);
    expect(paths).toContain("machines/react-machine.ts");
    expect(paths).toContain("index.ts");
    expect(paths.some((p) => p.startsWith("test/"))).toBe(false);
    // Every kind of import is seen: a static one, a type-only one and a dynamic one.
    const kinds = new Set(library.files.flatMap(importsOf).map((i) => i.kind));
    expect([...kinds].sort()).toEqual(["dynamic", "type", "value"]);
  });

  it("places every library file in one layer", () => {
    const unplaced = library.files.map((f) => f.path).filter((path) => layerOf(path) === undefined);
    expect(unplaced, "a new folder: add it to LAYERS (and to the folder table in docs/ARCHITECTURE.md)").toEqual([]);
  });

  it("never imports a layer above, nor a sibling on the same level", () => {
    const { wrong, lazyUsed } = check(library.files.flatMap(importsOf));
    expect(wrong).toEqual([]);
    // An exception no import needs any more goes too.
    expect(lazyUsed.sort()).toEqual(Object.keys(LAZY_UPWARD).sort());
  });

  it("reports an import against the flow (the check can fail)", () => {
    const at = (from: string, to: string, kind: Import["kind"] = "value"): Import => ({ from, to, line: 1, kind });
    const { wrong } = check([
      at("machines/contract/context.ts", "machines/chart/output.ts", "type"),
      at("queue/worker.ts", "otel/run-tracer.ts"),
      at("machines/runner.ts", "otel/trace-agent.ts"),
      at("actors/llm-step.ts", "scripts/bundle.mjs"),
      // These flow down (or stay in their group): not reported.
      at("machines/chart/output.ts", "machines/contract/context.ts"),
      at("cli/main.ts", "index.ts"),
      at("machines/chart/output.ts", "machines/chart/partial-json.ts"),
    ]);
    expect(wrong).toEqual([
      "machines/contract/context.ts:1 (machines/contract/) imports machines/chart/output.ts (machines/chart/), a layer above [type]",
      "queue/worker.ts:1 (queue/) imports otel/run-tracer.ts (otel/), a sibling on its level [value]",
      // The lazy load is allowed as a dynamic import only.
      "machines/runner.ts:1 (machines/runner.ts) imports otel/trace-agent.ts (otel/), a layer above [value]",
      "actors/llm-step.ts:1 imports scripts/bundle.mjs, which is not library source",
    ]);
  });
});
