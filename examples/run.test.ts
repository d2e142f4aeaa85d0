import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { replies, startOpenAIServer, type OpenAIServer } from "../testing.js";
import { repoPath } from "./support/paths.js";

// Each example is a real `node examples/run.mjs` process; the first one compiles the examples.
vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 });

/**
 * The examples as a user runs them, on the live path: `node examples/run.mjs <name>` with
 * OPENAI_BASE_URL pointing at `jianmu serve` (each passes, or says it needs a real model and is
 * skipped, as examples/README.md says), and at an endpoint that fails every call (each prints why
 * and exits 1, leaving nothing behind).
 */
const EXAMPLES = readdirSync(repoPath("examples"))
  .filter((file) => file.endsWith(".ts") && !file.endsWith(".test.ts"))
  .map((file) => file.slice(0, -3));
const CLI = repoPath("dist", "cli", "main.js");

/** The environment of a machine with no model configured, plus what the test points the examples at. */
function env(extra: Record<string, string>): Record<string, string> {
  const clean = Object.fromEntries(Object.entries(process.env).filter((entry): entry is [string, string] => entry[1] !== undefined && !/^(OPENAI_|JIANMU_)/.test(entry[0])));
  return { ...clean, NO_COLOR: "1", ...extra };
}

/** Runs an example with a temp folder of its own (TMPDIR), so what it leaves behind can be seen. */
function runExample(name: string, extra: Record<string, string>): Promise<{ code: number | null; output: string; temp: string }> {
  const temp = mkdtempSync(join(tmpdir(), "jianmu-example-run-"));
  return new Promise((resolve, reject) => {
    // From a folder without a jianmu.yaml, as examples/README.md advises.
    const child = spawn(process.execPath, [repoPath("examples", "run.mjs"), name], { cwd: temp, env: env({ TMPDIR: temp, ...extra }), stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, output, temp }));
  });
}

/** The "with jianmu serve" column of an example that talks to another provider's API. */
const OTHER_API = "not OpenAI: replays its own recording";

/** examples/README.md's table: each example's file and what its "with jianmu serve" column says. */
function documented(): Map<string, string> {
  const rows = new Map<string, string>();
  for (const line of readFileSync(repoPath("examples", "README.md"), "utf8").split("\n")) {
    const cells = line.split("|").map((cell) => cell.trim());
    const file = /^\[`([\w-]+)\.ts`\]/.exec(cells[1] ?? "")?.[1];
    if (file !== undefined) rows.set(file, cells.at(-2)!);
  }
  return rows;
}

let serve: ChildProcess;
let serveURL: string;
let failing: OpenAIServer;

beforeAll(async () => {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run \`npm run build\` first (npm test does)`);
  serve = spawn(process.execPath, [CLI, "serve"], { env: env({}), stdio: ["ignore", "pipe", "pipe"] });
  serveURL = await new Promise<string>((resolve) => {
    let out = "";
    serve.stdout!.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const found = /OPENAI_BASE_URL=(\S+)/.exec(out);
      if (found) resolve(found[1]!);
    });
  });
  failing = await startOpenAIServer({ respond: () => replies.error(404, "this endpoint has no models (the examples' failing endpoint)") });
});

afterAll(async () => {
  serve?.kill("SIGTERM");
  await failing?.close();
});

describe("every example against jianmu serve", () => {
  it("is listed in examples/README.md with what it does against jianmu serve, and README.md names the ones that run", () => {
    expect([...documented().keys()].sort()).toEqual([...EXAMPLES].sort());
    const running = [...documented()].filter(([, column]) => column === "runs").map(([name]) => name);
    const claim = /Of the examples, ([^;]*?) run against it/.exec(readFileSync(repoPath("README.md"), "utf8").replace(/\s+/g, " "))?.[1] ?? "";
    expect([...claim.matchAll(/`([\w-]+)`/g)].map((match) => match[1]).sort()).toEqual(running.sort());
  });

  it.each(EXAMPLES)("%s passes, or says it needs a real model and is skipped (as its README row says)", async (name) => {
    const { code, output } = await runExample(name, { OPENAI_BASE_URL: serveURL });
    expect(code, output).toBe(0);
    // An example on another provider's API (Claude through fromAiSdk) does not use the OpenAI endpoint: it replays its own recording.
    if (documented().get(name) === OTHER_API) {
      expect(output).toMatch(/^offline: /);
      return;
    }
    const skipped = output.startsWith(`skipped ${name}: it needs a real model.`);
    expect(documented().get(name)).toBe(skipped ? "skipped: needs a real model" : "runs");
    if (skipped) {
      // Why, and what to do instead.
      expect(output).toContain("is jianmu serve, which replays only its own tasks");
      expect(output).toContain("Set OPENAI_API_KEY");
    } else {
      expect(output).toMatch(/^live: OpenAI-compatible endpoint http:\/\/127\.0\.0\.1:\d+\/v1/);
      expect(output).not.toMatch(/the run failed/);
    }
  });
});

describe("node examples/run.mjs", () => {
  it("compiles the examples only when a source changed (as examples/README.md says)", async () => {
    const stamp = join(repoPath("node_modules", ".cache", "jianmu-examples"), ".compiled");
    await runExample("minimal", {});
    const compiled = statSync(stamp).mtimeMs;
    const again = await runExample("minimal", {});
    expect(again.code, again.output).toBe(0);
    expect(statSync(stamp).mtimeMs).toBe(compiled);
  });
});

describe("every example whose run fails", () => {
  it.each(EXAMPLES)("%s prints why and exits 1, leaving nothing behind", async (name) => {
    // Every provider's endpoint is the failing one (the Claude example reads ANTHROPIC_*).
    const { code, output, temp } = await runExample(name, { OPENAI_BASE_URL: failing.baseURL, ANTHROPIC_BASE_URL: failing.baseURL, ANTHROPIC_API_KEY: "failing-endpoint" });
    expect(code, output).toBe(1);
    // The OpenAI client quotes the endpoint's body; the AI SDK's Anthropic provider gives the status text.
    expect(output).toMatch(/the run failed \(modelError\): .*HTTP 404: (this endpoint has no models|Not Found)/);
    // Said once, with no stack.
    expect(output.split("the run failed").length - 1, output).toBe(1);
    expect(output).not.toMatch(/\n\s+at /);
    expect(readdirSync(temp)).toEqual([]);
  });
});
