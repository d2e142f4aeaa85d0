import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { withBundledModules } from "../package/bundled-modules.js";

/**
 * What each entry point loads, observed in a fresh Node process through a module resolve hook
 * (on the built package: `npm run build` first; `npm test` does it). jianmu/http must not load
 * React, and not SQLite until a handler uses its default store; jianmu must load no web code.
 */
const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

const HOOKS = `
export async function resolve(specifier, context, next) {
  const found = await next(specifier, context);
  process.stderr.write("LOADED " + found.url + "\\n");
  return found;
}`;

function loaded(entry: string): string[] {
  if (!existsSync(join(root, "dist", entry))) throw new Error("dist/ is missing: run `npm run build` first");
  const register = `import { register } from "node:module"; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(HOOKS)}`)});`;
  const result = spawnSync(process.execPath, ["--import", `data:text/javascript,${encodeURIComponent(register)}`, "--input-type=module", "-e", `await import(${JSON.stringify(pathToFileURL(join(root, "dist", entry)).href)})`], {
    cwd: root,
    encoding: "utf8",
  });
  expect(result.status, result.stderr).toBe(0);
  // dist/ is bundled: each loaded chunk also counts as the modules it holds.
  return withBundledModules(result.stderr.split("\n").filter((line) => line.startsWith("LOADED ")).map((line) => line.slice(7)));
}

describe("entry points load only their own parts", () => {
  it("jianmu/http: the handler without React and without SQLite", () => {
    const urls = loaded("http.js");
    expect(urls.some((u) => u.includes("/dist/web/server/handler.js"))).toBe(true);
    expect(urls).toContain("node:crypto"); // the hook sees built-ins too, so their absence below means something
    expect(urls.filter((u) => /\/node_modules\/(react|react-dom|@xstate\/react|better-sqlite3)\//.test(u))).toEqual([]);
    expect(urls.filter((u) => u.includes("/dist/web/client/"))).toEqual([]);
  });

  it("jianmu/react: the client without the server", () => {
    const urls = loaded("react.js");
    expect(urls.some((u) => u.includes("/node_modules/@xstate/react/"))).toBe(true);
    expect(urls.filter((u) => u.includes("/dist/web/server/") || u.startsWith("node:"))).toEqual([]);
  });

  it("jianmu/client: the client statechart without React and without the server", () => {
    const urls = loaded("client.js");
    expect(urls.some((u) => u.includes("/dist/web/client/agent-client-machine.js"))).toBe(true);
    expect(urls.some((u) => u.includes("/node_modules/xstate/"))).toBe(true);
    expect(urls.filter((u) => /\/node_modules\/(react|react-dom|@xstate\/react)\//.test(u) || u.includes("/dist/web/server/") || u.startsWith("node:"))).toEqual([]);
  });

  it("jianmu: no web code", () => {
    expect(loaded("index.js").filter((u) => u.includes("/dist/web/") || /\/node_modules\/(react|@xstate\/react)\//.test(u))).toEqual([]);
  });
});
