#!/usr/bin/env node
// Run after `tsc -p tsconfig.build.json`. The published .d.ts files name xstate's types as they are
// in our devDependency; an app may have an older xstate within the peer range. xstate 5.3x added a
// 15th type parameter to StateMachine (TTransitionMeta, defaulting to TStateMeta); tsc writes it out,
// and xstate 5.30 refuses 15 arguments. Where it equals its default it says nothing, so it is dropped:
// the types then read the same on every xstate the peer range allows (test/package/consumer.test.ts).
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const OPEN = 'import("xstate").StateMachine<';

/** Splits the type arguments starting at `start` (just after `<`); returns them and the index of the closing `>`. */
function typeArguments(text, start) {
  const args = [];
  let depth = 0;
  let from = start;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (c === "<" || c === "{" || c === "(" || c === "[") depth++;
    else if (c === ">" && text[i - 1] === "=") continue; // an arrow in a function type
    else if (c === ">" || c === "}" || c === ")" || c === "]") {
      if (depth === 0) {
        args.push(text.slice(from, i));
        return { args, end: i };
      }
      depth--;
    } else if (c === "," && depth === 0) {
      args.push(text.slice(from, i));
      from = i + 1;
    }
  }
  throw new Error("unbalanced StateMachine type arguments");
}

function rewrite(text) {
  let out = "";
  let at = 0;
  for (let open = text.indexOf(OPEN); open !== -1; open = text.indexOf(OPEN, at)) {
    const start = open + OPEN.length;
    const { args, end } = typeArguments(text, start);
    out += text.slice(at, start);
    const kept = args.length === 15 && args[14].trim() === args[12].trim() ? args.slice(0, 14) : args;
    out += kept.join(",") + ">";
    at = end + 1;
  }
  return out + text.slice(at);
}

function* declarations(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* declarations(path);
    else if (entry.name.endsWith(".d.ts")) yield path;
  }
}

let changed = 0;
for (const file of declarations(process.argv[2] ?? "dist")) {
  const text = readFileSync(file, "utf8");
  if (!text.includes(OPEN)) continue;
  const next = rewrite(text);
  if (next !== text) {
    writeFileSync(file, next);
    changed++;
  }
}
if (process.env.JIANMU_VERBOSE) console.error(`types-compat: ${changed} declaration file(s) adjusted`);
