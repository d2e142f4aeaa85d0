import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { pathToFileURL } from "node:url";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
// Installed with @opentelemetry/sdk-trace-base (a dev dependency); the names the spans use are checked against it.
import * as incubating from "@opentelemetry/semantic-conventions/incubating";
import { describe, expect, it } from "vitest";
import { withBundledModules } from "../package/bundled-modules.js";
import { human } from "../../actors/messages.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { runAgent } from "../../machines/runner.js";
import { OPERATION, TRACE_ATTRIBUTES, TraceOptionsError, traceAgent } from "../../otel.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import { memoryTracing } from "./helpers.js";
import { buildDistIfMissing } from "../built-dist.js";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** Every file `entry` loads through static imports (type-only imports and `import()` excluded). */
function staticGraph(entry: string): Set<string> {
  const seen = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    if (!file.endsWith(".ts")) return;
    const source = readFileSync(file, "utf8");
    for (const match of source.matchAll(/^\s*(?:import|export)\s+(?!type\b)(?:[^"';]*?\s+from\s+)?["']([^"']+)["']/gm)) {
      const target = match[1]!;
      if (target.startsWith(".")) visit(resolve(dirname(file), target.replace(/\.js$/, ".ts")));
      else seen.add(target);
    }
  };
  visit(join(ROOT, entry));
  return seen;
}

describe("the jianmu/otel entry point", () => {
  it('is not loaded by import "jianmu": no static import reaches OpenTelemetry or otel/', () => {
    const graph = [...staticGraph("index.ts")].map((file) => (file.startsWith("/") ? relative(ROOT, file) : file));
    expect(graph).toContain("machines/runner.ts");
    expect(graph.filter((file) => file.startsWith("@opentelemetry") || file.startsWith("otel"))).toEqual([]);
    // And the entry point itself does reach it: through loadOptionalPeer's import() of otel/trace-agent.ts.
    expect(readFileSync(join(ROOT, "otel.ts"), "utf8")).toContain('import("./otel/trace-agent.js")');
    expect([...staticGraph("otel/trace-agent.ts")]).toContain("@opentelemetry/api");
  });

  it('is not loaded by import "jianmu" at run time either (the built package, watched by a module hook)', () => {
    buildDistIfMissing("otel.js");
    const dir = mkdtempSync(join(tmpdir(), "jianmu-otel-hook-"));
    try {
      // A loader hook that reports every module Node resolves, appended synchronously to a file: the
      // hooks run on their own thread, whose stderr writes can be lost when the process exits.
      const log = join(dir, "resolved.log");
      writeFileSync(join(dir, "hooks.mjs"), `import { appendFileSync } from "node:fs"; export async function resolve(s, c, next) { const r = await next(s, c); appendFileSync(${JSON.stringify(log)}, 'RESOLVED ' + r.url + '\\n'); return r; }\n`);
      writeFileSync(join(dir, "register.mjs"), `import { register } from "node:module"; register(${JSON.stringify(pathToFileURL(join(dir, "hooks.mjs")).href)});\n`);
      const resolvedBy = (entry: string): string => {
        const url = pathToFileURL(join(ROOT, "dist", entry)).href;
        const child = spawnSync(process.execPath, ["--import", join(dir, "register.mjs"), "--input-type=module", "-e", `await import(${JSON.stringify(url)})`], {
          cwd: ROOT,
          encoding: "utf8",
        });
        expect(child.status, child.stderr).toBe(0);
        const resolved = readFileSync(log, "utf8");
        rmSync(log);
        // dist/ is bundled: each resolved chunk also counts as the modules it holds.
        const urls = resolved.split("\n").filter((line) => line.startsWith("RESOLVED ")).map((line) => line.slice("RESOLVED ".length));
        return withBundledModules(urls).join("\n");
      };
      const index = resolvedBy("index.js");
      expect(index).toContain("dist/machines/runner.js");
      expect(index).not.toMatch(/opentelemetry|dist\/otel/);
      expect(resolvedBy("otel.js")).toContain("@opentelemetry/api");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("uses the GenAI semantic conventions' own names", () => {
    const known = new Set<unknown>(Object.values(incubating as Record<string, unknown>).filter((value) => typeof value === "string"));
    const genAi = Object.values(TRACE_ATTRIBUTES).filter((name) => name.startsWith("gen_ai.") || name.startsWith("error.") || name.startsWith("server."));
    expect(genAi.length).toBeGreaterThan(10);
    for (const name of genAi) expect(known, name).toContain(name);
    expect(incubating.GEN_AI_OPERATION_NAME_VALUE_INVOKE_AGENT).toBe(OPERATION.invokeAgent);
    expect(incubating.GEN_AI_OPERATION_NAME_VALUE_CHAT).toBe(OPERATION.chat);
    expect(incubating.GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL).toBe(OPERATION.executeTool);
  });

  it("refuses a tracer that is not one, naming the option and the fix", async () => {
    const machine = createReactMachine({ modelClient: scriptedModel([{ content: "hi" }]), configFile: false });
    await expect(runAgent(machine, { messages: [human("hello")] }, { tracer: {} as never })).rejects.toThrow(
      /options\.tracer must be an OpenTelemetry Tracer: pass trace\.getTracer\("my-app"\)/,
    );
    const { createActor } = await import("xstate");
    const actor = createActor(machine, { input: { messages: [human("hello")] } });
    expect(() => traceAgent(actor, { tracer: memoryTracing().tracer, captureContent: "yes" as never })).toThrow(TraceOptionsError);
    expect(() => traceAgent(actor, { tracer: memoryTracing().tracer, secrets: [42] as never })).toThrow(/options\.secrets must be an array of strings/);
  });

  it("never lets a fault in tracing reach the run: it goes to OpenTelemetry's diagnostic logger", async () => {
    const { diag, DiagLogLevel } = await import("@opentelemetry/api");
    const reported: string[] = [];
    const noop = () => {};
    diag.setLogger({ error: (message: string) => reported.push(message), warn: noop, info: noop, debug: noop, verbose: noop }, DiagLogLevel.ERROR);
    try {
      const tracing = memoryTracing();
      // A tracer whose exporter side breaks once the run is under way.
      const broken = {
        startSpan: (name: string, options?: object, context?: never) => {
          if (name.startsWith("chat")) throw new Error("the span limit was reached");
          return tracing.tracer.startSpan(name, options, context);
        },
      };
      const machine = createReactMachine({ modelClient: scriptedModel([{ content: "still fine" }]), configFile: false });
      const output = await runAgent(machine, { messages: [human("hello")] }, { tracer: broken });
      expect(output).toMatchObject({ status: "succeeded", finalAnswer: "still fine" });
      expect(reported.some((message) => message.includes("jianmu/otel") && message.includes("the span limit was reached"))).toBe(true);
      expect(tracing.spans().map((span) => span.name)).toEqual(["invoke_agent ReActAgent"]);
    } finally {
      diag.disable();
    }
  });

  it("removes the secrets it is given from everything it records, content included", async () => {
    const machine = createReactMachine({
      modelClient: scriptedModel([{ content: "The vault code is hunter2-vault-code, as you asked." }]),
      configFile: false,
    });
    const tracing = memoryTracing();
    const { createActor, toPromise } = await import("xstate");
    const actor = createActor(machine, { input: { messages: [human("code?")] } });
    traceAgent(actor, { tracer: tracing.tracer, captureContent: true, secrets: ["hunter2-vault-code"] });
    actor.start();
    await toPromise(actor);
    const text = JSON.stringify(tracing.spans().map((span) => span.attributes));
    expect(text).toContain("The vault code is [redacted], as you asked.");
    expect(text).not.toContain("hunter2");
  });
});
