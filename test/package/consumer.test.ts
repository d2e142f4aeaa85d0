import { execFile } from "node:child_process";
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startOpenAIServer, type OpenAIServer } from "../../testing/openai-server.js";
import { scriptedTurns, textTurn, toolCallTurn } from "../../testing/turns.js";
import { manifest, ROOT } from "./package-manifest.js";

const run = promisify(execFile);
const TSC = join(ROOT, "node_modules", "typescript", "bin", "tsc");
const APP = join(ROOT, "test", "package", "consumer-app");

/**
 * The packed tarball installed into a fresh app with the app's own xstate, zod and openai: the
 * lowest versions the peer ranges allow, and the latest they allow. One `npm install` each.
 */
const VERSION_SETS = {
  lowest: { xstate: "~5.30.0", zod: "~4.1.0", openai: "~6.48.0" },
  latest: { xstate: manifest.peerDependencies!["xstate"]!, zod: manifest.peerDependencies!["zod"]!, openai: manifest.peerDependencies!["openai"]! },
} as const;

let tarball: string;
const servers: OpenAIServer[] = [];

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), "jianmu-pack-"));
  const { stdout } = await run("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", dir], { cwd: ROOT });
  tarball = join(dir, (JSON.parse(stdout) as { filename: string }[])[0]!.filename);
}, 120_000);
afterAll(() => Promise.all(servers.map((server) => server.close())));

/** A loopback endpoint of its own per app (scripted turns answer by request order). */
async function endpoint(): Promise<OpenAIServer> {
  const turns = scriptedTurns([toolCallTurn([{ id: "call_w", name: "get_weather", args: { city: "Paris" } }]), textTurn("It is sunny in Paris.")]);
  const server = await startOpenAIServer({ respond: turns.respond });
  servers.push(server);
  return server;
}

function installedVersion(app: string, name: string): string {
  return (JSON.parse(readFileSync(join(app, "node_modules", name, "package.json"), "utf8")) as { version: string }).version;
}

describe.concurrent.each(Object.entries(VERSION_SETS))("an app with its own packages (%s)", (label, versions) => {
  it("installs the tarball, typechecks strictly without @types/node, and runs the agent inside its own machine", async () => {
    const app = mkdtempSync(join(tmpdir(), `jianmu-consumer-${label}-`));
    writeFileSync(
      join(app, "package.json"),
      JSON.stringify({ name: `consumer-${label}`, private: true, type: "module", dependencies: { jianmu: `file:${tarball}`, ...versions } }, null, 2),
    );
    await run("npm", ["install", "--no-audit", "--no-fund", "--loglevel=error"], { cwd: app, timeout: 240_000 });

    // One copy of each: the app's. jianmu brings none of its own.
    expect(existsSync(join(app, "node_modules", "jianmu", "node_modules"))
      ? readdirSync(join(app, "node_modules", "jianmu", "node_modules")).filter((name) => ["xstate", "zod", "openai"].includes(name))
      : []).toEqual([]);
    if (label === "lowest") {
      expect(installedVersion(app, "xstate")).toMatch(/^5\.30\./);
      expect(installedVersion(app, "zod")).toMatch(/^4\.1\./);
      expect(installedVersion(app, "openai")).toMatch(/^6\.48\./);
    }
    expect(existsSync(join(app, "node_modules", "@types", "node"))).toBe(false);
    // No optional peer came along.
    for (const name of ["@modelcontextprotocol/sdk", "better-sqlite3", "@statelyai/inspect"]) expect(existsSync(join(app, "node_modules", name)), name).toBe(false);

    copyFileSync(join(APP, "app.ts"), join(app, "app.ts"));
    copyFileSync(join(APP, "tsconfig.json"), join(app, "tsconfig.json"));
    const typecheck = await run(process.execPath, [TSC, "-p", "tsconfig.json"], { cwd: app }).catch((error: { stdout: string }) => ({ stdout: error.stdout, failed: true }));
    expect(typecheck.stdout).toBe("");

    const server = await endpoint();
    const { stdout } = await run(process.execPath, [join("out", "app.js")], { cwd: app, env: { PATH: process.env["PATH"] ?? "", OPENAI_BASE_URL: server.baseURL } });
    expect(JSON.parse(stdout)).toEqual({ answer: "It is sunny in Paris.", status: "succeeded", modelCalls: 2 });
    const mine = server.requests.filter((request) => request.headers["authorization"] === "Bearer app-key");
    expect(mine.map((request) => (request.body as { model: string }).model)).toEqual(["app-model", "app-model"]);

    // The CLI from the tarball: its offline demo needs only the fixtures shipped with it.
    const demo = await run(process.execPath, [join("node_modules", "jianmu", "dist", "cli", "main.js"), "run"], { cwd: app, env: { PATH: process.env["PATH"] ?? "", NO_COLOR: "1" } });
    expect(demo.stdout).toMatch(/^Capital: The capital of Mexico is Mexico City\./);

    // The optional parts, asked for without their packages: one line naming the install command.
    const probe = `try { await import("jianmu/sqlite"); } catch (error) { console.log(error.message); }`;
    const missing = await run(process.execPath, ["--input-type=module", "-e", probe], { cwd: app });
    expect(missing.stdout.trim()).toBe("jianmu/sqlite needs the optional package better-sqlite3, which is not installed: run `npm install better-sqlite3`");
  }, 300_000);
});
