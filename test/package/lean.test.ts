import { execFile } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { withBundledModules } from "./bundled-modules.js";
import { entryPoints, manifest, optionalPeers, packedFiles, requiredPeers, ROOT } from "./package-manifest.js";

// Several real processes per test, on a machine the whole suite shares.
vi.setConfig({ testTimeout: 90_000, hookTimeout: 90_000 });

const run = promisify(execFile);
const REGISTER = join(ROOT, "test", "package", "load-log-register.mjs");

/** Import `specifier` in a fresh Node process from `cwd`; returns every module URL it resolved. */
async function modulesLoadedBy(specifier: string, cwd: string): Promise<string[]> {
  const log = join(mkdtempSync(join(tmpdir(), "jianmu-loads-")), "loads.txt");
  writeFileSync(log, "");
  await run(process.execPath, ["--import", REGISTER, "--input-type=module", "-e", `await import(${JSON.stringify(specifier)});`], {
    cwd,
    env: { ...process.env, JIANMU_LOAD_LOG: log },
  });
  // dist/ is bundled: each loaded chunk also counts as the modules it holds.
  return withBundledModules(readFileSync(log, "utf8").split("\n").filter(Boolean));
}

const packageOf = (url: string) => /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)?.[1];

describe("import(\"jianmu\") is lean", () => {
  it("the optional peers are declared optional and kept as devDependencies", () => {
    expect(optionalPeers()).toEqual(expect.arrayContaining(["@modelcontextprotocol/sdk", "better-sqlite3", "@statelyai/inspect"]));
    for (const name of Object.keys(manifest.peerDependencies ?? {})) {
      expect(manifest.dependencies ?? {}, `${name} is a peer, not a dependency`).not.toHaveProperty(name);
      expect(manifest.devDependencies, `${name} stays an exact devDependency`).toHaveProperty(name, expect.stringMatching(/^\d+\.\d+\.\d+$/));
    }
  });

  for (const specifier of [manifest.name, `${manifest.name}/testing`]) {
    it(`${specifier} loads none of the optional peers, whatever the entry points are`, async () => {
      const loaded = await modulesLoadedBy(specifier, ROOT);
      // The check must be able to fail: the load log really sees packages.
      expect(loaded.map(packageOf)).toContain("xstate");
      const heavy = loaded.map(packageOf).filter((name): name is string => name !== undefined && optionalPeers().includes(name));
      expect([...new Set(heavy)]).toEqual([]);
    });
  }

  it("jianmu loads the yaml package only when a jianmu.yaml is read", async () => {
    expect((await modulesLoadedBy(manifest.name, ROOT)).map(packageOf)).not.toContain("yaml");
    // The load log sees ESM resolution only; a require() of yaml shows in the CommonJS cache instead.
    const dir = mkdtempSync(join(tmpdir(), "jianmu-yaml-"));
    writeFileSync(join(dir, "jianmu.yaml"), "limits:\n  max_iterations: 4\n");
    const script = [
      `import { createRequire } from "node:module";`,
      `const cache = createRequire(${JSON.stringify(join(ROOT, "package.json"))}).cache;`,
      `const yamlLoaded = () => Object.keys(cache).some((path) => path.includes("/node_modules/yaml/"));`,
      `const { loadConfig } = await import(${JSON.stringify(manifest.name)});`,
      `const imported = yamlLoaded();`,
      `const { maxIterations } = loadConfig({}, { path: ${JSON.stringify(join(dir, "jianmu.yaml"))} });`,
      `console.log(JSON.stringify({ imported, read: yamlLoaded(), maxIterations }));`,
    ].join("\n");
    const { stdout } = await run(process.execPath, ["--input-type=module", "-e", script], { cwd: ROOT });
    // Reading the file loads it (so the probe can fail), importing jianmu does not.
    expect(JSON.parse(stdout)).toEqual({ imported: false, read: true, maxIterations: 4 });
  });

  it(`${manifest.name} leaves what a run may never need until it is used: openai, the viewer, the recording reader`, async () => {
    const loaded = await modulesLoadedBy(manifest.name, ROOT);
    const packages = loaded.map(packageOf);
    expect(packages).toContain("zod");
    // The SDK and the code that calls it load on the first model call (actors/openai/openai-sdk.ts).
    expect(packages).not.toContain("openai");
    const own = loaded.filter((url) => url.includes("/dist/")).map((url) => url.replace(/^.*\/dist\//, ""));
    expect(own).toContain("machines/react-machine.js");
    for (const later of [
      "actors/openai/call-path.js",
      "actors/openai/openai-attempt.js",
      "actors/openai/openai-wire-schemas.js",
      "visualize/viewer.js",
      "visualize/render-viewer.js",
      "visualize/analysis.js",
      "visualize/recording-reader.js",
      "visualize/recording-format.js",
      "visualize/replay.js",
    ]) {
      expect(own, later).not.toContain(later);
    }
    expect(loaded).not.toContain("node:crypto");
  });

  it("the first model call loads openai, and a run through ModelClient.resolve answers (fresh process, built package)", async () => {
    const script = `
      const jianmu = await import(${JSON.stringify(manifest.name)});
      const { startOpenAIServer, scriptedTurns, textTurn } = await import(${JSON.stringify(`${manifest.name}/testing`)});
      const server = await startOpenAIServer({ respond: scriptedTurns([textTurn("lazy and loaded")]).respond });
      const model = jianmu.ModelClient.resolve({ baseURL: server.baseURL, apiKey: "test", model: "scripted" });
      const machine = jianmu.createReactMachine({ modelClient: model, tools: [] });
      const output = await jianmu.runAgent(machine, { messages: [jianmu.human("hello")] });
      await server.close();
      console.log(JSON.stringify({ status: output.status, finalAnswer: output.finalAnswer }));
    `;
    const log = join(mkdtempSync(join(tmpdir(), "jianmu-loads-")), "loads.txt");
    writeFileSync(log, "");
    const { stdout } = await run(process.execPath, ["--import", REGISTER, "--input-type=module", "-e", script], { cwd: ROOT, env: { ...process.env, JIANMU_LOAD_LOG: log } });
    expect(JSON.parse(stdout)).toEqual({ status: "succeeded", finalAnswer: "lazy and loaded" });
    const loaded = readFileSync(log, "utf8").split("\n").filter(Boolean);
    expect(loaded.map(packageOf)).toContain("openai");
  });

  it("jianmu/mcp loads the MCP SDK (the log sees what an entry point brings)", async () => {
    const loaded = await modulesLoadedBy(`${manifest.name}/mcp`, ROOT);
    expect(loaded.map(packageOf)).toContain("@modelcontextprotocol/sdk");
  });

  it("jianmu/ai-sdk loads the AI SDK (ai), and no provider package of its own", async () => {
    const packages = (await modulesLoadedBy(`${manifest.name}/ai-sdk`, ROOT)).map(packageOf);
    expect(packages).toContain("ai");
    expect(packages.filter((name) => name?.startsWith("@ai-sdk/") && name !== "@ai-sdk/provider" && name !== "@ai-sdk/provider-utils" && name !== "@ai-sdk/gateway")).toEqual([]);
  });
});

describe("an app without the optional packages", () => {
  let app: string;
  beforeAll(() => {
    // A consumer whose node_modules holds the packed jianmu and its required peers, nothing else.
    app = mkdtempSync(join(tmpdir(), "jianmu-bare-app-"));
    const installed = join(app, "node_modules", manifest.name);
    for (const file of packedFiles()) {
      mkdirSync(dirname(join(installed, file)), { recursive: true });
      cpSync(join(ROOT, file), join(installed, file));
    }
    for (const name of [...requiredPeers(), ...Object.keys(manifest.dependencies ?? {})]) {
      mkdirSync(dirname(join(app, "node_modules", name)), { recursive: true });
      symlinkSync(join(ROOT, "node_modules", name), join(app, "node_modules", name), "dir");
    }
    writeFileSync(join(app, "package.json"), JSON.stringify({ name: "bare-app", private: true, type: "module" }));
  });

  async function importIn(specifier: string): Promise<{ ok: boolean; message: string }> {
    const script = `try { await import(${JSON.stringify(specifier)}); console.log("loaded"); } catch (error) { console.log(error.message); }`;
    const { stdout } = await run(process.execPath, ["--input-type=module", "-e", script], { cwd: app });
    return { ok: stdout.trim() === "loaded", message: stdout.trim() };
  }

  it("every entry point either loads or names the one install command it needs", async () => {
    for (const entry of entryPoints()) {
      const result = await importIn(entry.specifier);
      if (result.ok) continue;
      expect(result.message, entry.specifier).toMatch(/^\S+ needs the optional package (\S+), which is not installed: run `npm install \1`$/);
      const named = /optional package (\S+),/.exec(result.message)![1]!;
      expect(optionalPeers(), `${entry.specifier} names ${named}`).toContain(named);
    }
  });

  it("better-sqlite3 installed without its native build: one line with the cause and the fix", async () => {
    // An install whose native step failed (no prebuilt binary, no compiler): the package without build/.
    const pkg = join(app, "node_modules", "better-sqlite3");
    for (const part of ["package.json", "lib"]) cpSync(join(ROOT, "node_modules", "better-sqlite3", part), join(pkg, part), { recursive: true });
    for (const dep of ["bindings", "file-uri-to-path"]) symlinkSync(join(ROOT, "node_modules", dep), join(app, "node_modules", dep), "dir");
    try {
      const script = `const { SqliteCheckpointStore } = await import("jianmu/sqlite"); try { new SqliteCheckpointStore({ path: ":memory:" }); console.log("opened"); } catch (error) { console.log(error.name + ": " + error.message); }`;
      const { stdout } = await run(process.execPath, ["--input-type=module", "-e", script], { cwd: app });
      expect(stdout.trim()).toMatch(
        new RegExp(`^CheckpointError: .*SqliteCheckpointStore: cannot open :memory:: better-sqlite3's native module cannot be loaded on Node ${process.versions.node} \\(.{1,120}\\): run \`npm rebuild better-sqlite3\` \\(it needs a prebuilt binary for this platform or a C\\+\\+ toolchain\\)$`),
      );
      expect(stdout.length).toBeLessThan(400);
    } finally {
      rmSync(pkg, { recursive: true, force: true });
      for (const dep of ["bindings", "file-uri-to-path"]) rmSync(join(app, "node_modules", dep), { force: true });
    }
  });

  it("jianmu and jianmu/testing load; mcp, sqlite, inspect and ai-sdk each name their package", async () => {
    expect(await importIn(manifest.name)).toEqual({ ok: true, message: "loaded" });
    expect(await importIn(`${manifest.name}/testing`)).toEqual({ ok: true, message: "loaded" });
    expect((await importIn(`${manifest.name}/mcp`)).message).toBe(
      "jianmu/mcp needs the optional package @modelcontextprotocol/sdk, which is not installed: run `npm install @modelcontextprotocol/sdk`",
    );
    expect((await importIn(`${manifest.name}/sqlite`)).message).toBe("jianmu/sqlite needs the optional package better-sqlite3, which is not installed: run `npm install better-sqlite3`");
    expect((await importIn(`${manifest.name}/inspect`)).message).toBe(
      "jianmu/inspect needs the optional package @statelyai/inspect, which is not installed: run `npm install @statelyai/inspect`",
    );
    expect((await importIn(`${manifest.name}/ai-sdk`)).message).toBe("jianmu/ai-sdk needs the optional package ai, which is not installed: run `npm install ai`");
  });
});

describe("an app whose openai package is missing", () => {
  it("imports jianmu, and a model call fails as a typed model error naming the install command", async () => {
    // jianmu's files and the peers it loads on import (xstate, zod) and its dependency, but no openai.
    const app = mkdtempSync(join(tmpdir(), "jianmu-no-openai-app-"));
    const installed = join(app, "node_modules", manifest.name);
    for (const file of packedFiles()) {
      mkdirSync(dirname(join(installed, file)), { recursive: true });
      cpSync(join(ROOT, file), join(installed, file));
    }
    for (const name of [...requiredPeers().filter((peer) => peer !== "openai"), ...Object.keys(manifest.dependencies ?? {})]) {
      mkdirSync(dirname(join(app, "node_modules", name)), { recursive: true });
      symlinkSync(join(ROOT, "node_modules", name), join(app, "node_modules", name), "dir");
    }
    writeFileSync(join(app, "package.json"), JSON.stringify({ name: "no-openai-app", private: true, type: "module" }));
    const script = `
      const jianmu = await import(${JSON.stringify(manifest.name)});
      const model = jianmu.ModelClient.resolve({ baseURL: "http://127.0.0.1:9/v1", apiKey: "test", model: "m" });
      const failure = await model.complete({ messages: [jianmu.human("hello")] }).then(() => null, (error) => error);
      const machine = jianmu.createReactMachine({ modelClient: model, tools: [] });
      const output = await jianmu.runAgent(machine, { messages: [jianmu.human("hello")] });
      console.log(JSON.stringify({ name: failure?.name, kind: failure?.kind, message: failure?.message, status: output.status, reason: output.termination?.reason }));
    `;
    const { stdout } = await run(process.execPath, ["--input-type=module", "-e", script], { cwd: app });
    const result = JSON.parse(stdout) as { name: string; kind: string; message: string; status: string; reason: string };
    expect(result).toMatchObject({ name: "ModelError", kind: "config", status: "failed", reason: "modelError" });
    expect(result.message).toMatch(/^model call: the openai package cannot be loaded \(.*'openai'.*\): run `npm install openai`$/);
  });
});
