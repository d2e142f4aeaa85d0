/*
 * A preload for counts.mjs: it makes XState's interpreter report every built-in action it resolves
 * (`assign`, `enqueueActions`, `emit`, `spawnChild`, ...) to `globalThis.__xstateResolved`, so a
 * run's actions can be counted whether or not they reach an inspector (only deferred ones do).
 * `node --import ./bench/count-hooks.mjs bench/counts.mjs`; it adds that one call and nothing else.
 * XState loads as CommonJS here (its package's `import` condition wraps the CJS build), so the hook
 * is on the CommonJS loader.
 */
import fs from "node:fs";
import Module from "node:module";

const SITE = "const [nextState, params, actions] = builtinAction.resolve(";
const compileJs = Module._extensions[".js"];

Module._extensions[".js"] = function (module, filename) {
  if (!/[\\/]xstate[\\/]dist[\\/]raise-[^\\/]*\.cjs\.js$/.test(filename)) return compileJs(module, filename);
  const source = fs.readFileSync(filename, "utf8");
  if (!source.includes(SITE)) throw new Error(`count-hooks: XState's action loop changed in ${filename}`);
  module._compile(source.replace(SITE, `globalThis.__xstateResolved?.(builtinAction.type, typeof action === "string" ? action : action.type);\n    ${SITE}`), filename);
};
