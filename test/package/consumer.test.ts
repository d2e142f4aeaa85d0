import { copyFileSync, existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startOpenAIServer, type OpenAIServer } from "../../testing/openai-server.js";
import { scriptedTurns, textTurn, toolCallTurn } from "../../testing/turns.js";
import { responsesTextTurn, responsesToolCallTurn } from "../../testing/responses-turns.js";
import { installApp, installedVersion, node22, packTarball, run, TSC } from "./packed-app.js";
import { manifest, ROOT } from "./package-manifest.js";

const APP = join(ROOT, "test", "package", "consumer-app");

/**
 * The packed tarball installed into a fresh app with the app's own xstate, zod and openai, on two
 * Nodes: today's Node 20 with the lowest versions the peer ranges allow, and Node 22 (the `node@22`
 * package from the npm registry) with the latest they allow, openai 7 included (it needs Node 22),
 * and today's AI SDK: the latest `ai` the peer range allows (7) with the latest @ai-sdk/openai, and
 * the type packages its declarations need. One `npm install` each.
 */
const VERSION_SETS = {
  "lowest, Node 20": { node: async () => process.execPath, versions: { xstate: "~5.30.0", zod: "~4.1.0", openai: "~6.48.0" }, aiSdk: false },
  "latest, Node 22": {
    node: node22,
    versions: {
      xstate: manifest.peerDependencies!["xstate"]!,
      zod: manifest.peerDependencies!["zod"]!,
      openai: manifest.peerDependencies!["openai"]!,
      ai: manifest.peerDependencies!["ai"]!,
      "@ai-sdk/openai": "latest",
      // What the AI SDK's own declarations import (node:http, json-schema), for a typecheck that reads them (skipLibCheck false).
      "@types/node": "^22.0.0",
      "@types/json-schema": "^7.0.15",
    },
    aiSdk: true,
  },
} as const;

let tarball: string;
const servers: OpenAIServer[] = [];

beforeAll(async () => {
  tarball = await packTarball();
}, 120_000);
afterAll(() => Promise.all(servers.map((server) => server.close())));

/** A loopback endpoint of its own per app (scripted turns answer by request order). */
async function endpoint(): Promise<OpenAIServer> {
  const turns = scriptedTurns([toolCallTurn([{ id: "call_w", name: "get_weather", args: { city: "Paris" } }]), textTurn("It is sunny in Paris.")]);
  const server = await startOpenAIServer({ respond: turns.respond });
  servers.push(server);
  return server;
}

/**
 * ai-sdk-app.ts in the app: `fromAiSdk(openai("app-model"))` from the app's own @ai-sdk/openai
 * typechecks strictly against jianmu/ai-sdk's published types, and the agent runs over it against
 * a loopback Responses API endpoint (what `openai(...)` speaks).
 */
async function runsOnTheAiSdk(app: string, node: string, env: Record<string, string>): Promise<void> {
  expect(installedVersion(app, "@ai-sdk/openai")).toMatch(/^[4-9]\./);
  copyFileSync(join(APP, "ai-sdk-app.ts"), join(app, "ai-sdk-app.ts"));
  copyFileSync(join(APP, "tsconfig.ai-sdk.json"), join(app, "tsconfig.ai-sdk.json"));
  const typecheck = await run(node, [TSC, "-p", "tsconfig.ai-sdk.json"], { cwd: app }).catch((error: { stdout: string }) => ({ stdout: error.stdout, failed: true }));
  expect(typecheck.stdout).toBe("");
  const turns = scriptedTurns([responsesToolCallTurn([{ id: "call_w", name: "get_weather", args: { city: "Paris" } }]), responsesTextTurn("It is sunny in Paris.")]);
  const server = await startOpenAIServer({ respond: turns.respond });
  servers.push(server);
  const { stdout } = await run(node, [join("out", "ai-sdk-app.js")], { cwd: app, env: { ...env, AI_SDK_BASE_URL: server.baseURL } });
  expect(JSON.parse(stdout)).toEqual({ answer: "It is sunny in Paris.", status: "succeeded", specificationVersion: "v4" });
  expect(server.requests.map((request) => [request.path, request.headers["authorization"], (request.body as { model: string }).model])).toEqual([
    ["/v1/responses", "Bearer ai-sdk-key", "app-model"],
    ["/v1/responses", "Bearer ai-sdk-key", "app-model"],
  ]);
  // The second request carried the call's result back as the Responses API's function_call_output.
  expect((server.requests[1]!.body as { input: { type?: string; output?: unknown }[] }).input).toContainEqual(expect.objectContaining({ type: "function_call_output", output: "sunny in Paris" }));
}

/** The README's jianmu.yaml, its endpoint pointed at `baseURL`. */
function readmeConfig(baseURL: string): string {
  const yaml = /```yaml\n([\s\S]*?)```/.exec(readFileSync(join(ROOT, "README.md"), "utf8"))?.[1];
  if (!yaml?.includes("context:")) throw new Error("README.md's jianmu.yaml block (with its context: section) is gone");
  return yaml.replace(/base_url: \S+/, `base_url: ${baseURL}`);
}

describe.concurrent.each(Object.entries(VERSION_SETS))("an app with its own packages (%s)", (label, set) => {
  it("installs the tarball, typechecks strictly (app.ts without Node's types), and runs the agent inside its own machine (and over the AI SDK)", async () => {
    const node = await set.node();
    const app = await installApp(label.replace(/\W+/g, "-"), tarball, { dependencies: set.versions, node });
    const env = { PATH: process.env["PATH"] ?? "", NO_COLOR: "1" };

    // One copy of each: the app's. jianmu brings none of its own.
    expect(existsSync(join(app, "node_modules", "jianmu", "node_modules"))
      ? readdirSync(join(app, "node_modules", "jianmu", "node_modules")).filter((name) => ["xstate", "zod", "openai", "ai"].includes(name))
      : []).toEqual([]);
    if (label.startsWith("lowest")) {
      expect(installedVersion(app, "xstate")).toMatch(/^5\.30\./);
      expect(installedVersion(app, "zod")).toMatch(/^4\.1\./);
      expect(installedVersion(app, "openai")).toMatch(/^6\.48\./);
      // Without @types/node: jianmu's published types stand on the app's packages alone.
      expect(existsSync(join(app, "node_modules", "@types", "node"))).toBe(false);
    } else {
      // Today's openai and AI SDK, which need Node 22: the peer ranges let npm install them beside jianmu.
      expect(installedVersion(app, "openai")).toMatch(/^7\./);
      expect(installedVersion(app, "ai")).toMatch(/^7\./);
    }
    // No optional peer came along.
    for (const name of ["@modelcontextprotocol/sdk", "better-sqlite3", "@statelyai/inspect", "gpt-tokenizer", "pg", "react"]) expect(existsSync(join(app, "node_modules", name)), name).toBe(false);

    copyFileSync(join(APP, "app.ts"), join(app, "app.ts"));
    copyFileSync(join(APP, "tsconfig.json"), join(app, "tsconfig.json"));
    const typecheck = await run(node, [TSC, "-p", "tsconfig.json"], { cwd: app }).catch((error: { stdout: string }) => ({ stdout: error.stdout, failed: true }));
    expect(typecheck.stdout).toBe("");

    const server = await endpoint();
    const { stdout } = await run(node, [join("out", "app.js")], { cwd: app, env: { ...env, OPENAI_BASE_URL: server.baseURL } });
    expect(JSON.parse(stdout)).toEqual({ answer: "It is sunny in Paris.", status: "succeeded", modelCalls: 2 });
    const mine = server.requests.filter((request) => request.headers["authorization"] === "Bearer app-key");
    expect(mine.map((request) => (request.body as { model: string }).model)).toEqual(["app-model", "app-model"]);

    if (set.aiSdk) await runsOnTheAiSdk(app, node, env);

    // The CLI from the tarball: its offline demo needs only the fixtures shipped with it.
    const cli = join("node_modules", "jianmu", "dist", "cli", "main.js");
    const demo = await run(node, [cli, "run"], { cwd: app, env });
    expect(demo.stdout).toMatch(/^Capital: The capital of Mexico is Mexico City\./);

    // The optional parts, asked for without their packages: one line naming the install command.
    const probe = `try { await import("jianmu/sqlite"); } catch (error) { console.log(error.message); }`;
    const missing = await run(node, ["--input-type=module", "-e", probe], { cwd: app });
    expect(missing.stdout.trim()).toBe("jianmu/sqlite needs the optional package better-sqlite3, which is not installed: run `npm install better-sqlite3`");

    // config.context without gpt-tokenizer: in code, and through the README's own jianmu.yaml in the CLI.
    const tokens = `import { createReactMachine, ModelClient } from "jianmu";
try { createReactMachine({ modelClient: ModelClient.resolve({ baseURL: "http://127.0.0.1:9/v1", model: "m" }), config: { context: { maxTokens: 1000 } } }); }
catch (error) { console.log(error.name + ": " + error.message); }`;
    expect((await run(node, ["--input-type=module", "-e", tokens], { cwd: app })).stdout).toBe(
      "OptionalPeerMissingError: config.context needs the optional package gpt-tokenizer, which is not installed: run `npm install gpt-tokenizer`\n",
    );
    writeFileSync(join(app, "jianmu.yaml"), readmeConfig(server.baseURL));
    const before = server.requests.length;
    const yamlRun = await run(node, [cli, "run", "What is 25 * 4 + 10?"], { cwd: app, env: { ...env, OPENAI_API_KEY: "app-key" } }).catch((error: { code: number; stdout: string; stderr: string }) => error);
    expect("code" in yamlRun ? yamlRun.code : 0).toBe(2);
    expect(yamlRun.stderr.match(/^jianmu: .*$/gm)).toEqual(["jianmu: config.context needs the optional package gpt-tokenizer, which is not installed: run `npm install gpt-tokenizer`"]);
    expect(server.requests.length).toBe(before);

    // jianmu/http's default store without better-sqlite3: refused when the handler is made, with the fix.
    const web = `import { createReactMachine, ModelClient } from "jianmu";
import { agentHandler } from "jianmu/http";
const agent = createReactMachine({ modelClient: ModelClient.resolve({ baseURL: "http://127.0.0.1:9/v1", model: "m" }), configFile: false });
try { agentHandler({ agents: { agent } }); console.log("made"); } catch (error) { console.log(error.name + ": " + error.message); }`;
    expect((await run(node, ["--input-type=module", "-e", web], { cwd: app })).stdout).toBe(
      "OptionalPeerMissingError: agentHandler's default store (SQLite) needs the optional package better-sqlite3, which is not installed: run `npm install better-sqlite3`; or pass store: false (runs kept in memory only) or a CheckpointStore of your own\n",
    );
  }, 420_000);
});
