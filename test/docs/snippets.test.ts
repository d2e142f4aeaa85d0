import { spawn, type ChildProcess } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { createServer } from "node:net";
import { dirname, join, relative, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { installByCommands, packTarball, run, TSC } from "../package/packed-app.js";
import { ROOT } from "../package/package-manifest.js";

// Fresh apps installed from the registry, the compiler and real processes: minutes, not seconds.
vi.setConfig({ testTimeout: 600_000, hookTimeout: 900_000 });

/**
 * Every TypeScript block of README.md and docs/*.md, as a user copies it into an app built the way
 * the page says: the packed tarball and only the packages of the page's install line (the nearest
 * `npm install jianmu ...` line above the block; README's first one where a page has none),
 * typechecked strictly as `tsc --init` sets an app up (strict; skipLibCheck on, so the libraries'
 * own .d.ts are not rechecked: test/package's consumer app checks jianmu's with it off). A block that
 * stands alone (it uses no stand-in below without declaring it) is also run, against `jianmu serve`
 * from the tarball; a block that starts a server (`.listen(`)
 * is kept running while the page's other blocks run (its port moved to a free one in both).
 * And every relative link of the shipped README and docs resolves to a file of the package.
 */

const PAGES = ["README.md", ...readdirSync(join(ROOT, "docs")).filter((file) => file.endsWith(".md")).sort().map((file) => `docs/${file}`)];

/**
 * What the docs' fragments take as already there: the reader's own objects, written elsewhere on the
 * page or in their app. Declared (not defined) for the typecheck; a block using one is not run.
 */
const STAND_INS: Record<string, string> = {
  modelClient: 'import("jianmu").ModelClient',
  tools: 'import("jianmu").Tool[]',
  constraints: 'import("jianmu").Guard[]',
  machine: 'import("jianmu").ReactMachine',
  agent: 'import("jianmu").ReactMachine',
  desk: 'import("jianmu").ReactMachine',
  input: 'import("jianmu").AgentInput',
  actor: 'import("xstate").Actor<import("jianmu").ReactMachine>',
  weather: 'import("jianmu").Tool',
  lookupOrder: 'import("jianmu").Tool',
  issueRefund: 'import("jianmu").Tool',
  callId: "string",
  runId: "string",
  store: 'import("jianmu").RunLogStore',
  render: "(partial: unknown) => void",
};

interface Block {
  page: string;
  /** File name in the app: the page and the block's number on it. */
  file: string;
  code: string;
  /** The install line's commands: each one's packages (the first command's are dependencies, `-D` ones dev). */
  install: { dependencies: string[]; devDependencies: string[] };
  server: boolean;
}

/** `npm install jianmu a b && npm install -D c`: what each command installs. */
function parseInstall(line: string): Block["install"] {
  const install: Block["install"] = { dependencies: [], devDependencies: [] };
  for (const command of line.replace(/#.*$/, "").split(/&&|;/)) {
    const words = command.trim().split(/\s+/);
    if (words[0] !== "npm" || !["install", "i"].includes(words[1] ?? "")) continue;
    const dev = words.includes("-D") || words.includes("--save-dev");
    for (const word of words.slice(2)) if (!word.startsWith("-")) (dev ? install.devDependencies : install.dependencies).push(word);
  }
  return install;
}

/** A page's install line: the whole app, so it names jianmu (lines adding one package to it are not). */
const INSTALL_LINE = /npm install jianmu\b[^\n`]*/g;
const readmeInstall = [...readFileSync(join(ROOT, "README.md"), "utf8").matchAll(INSTALL_LINE)][0]![0];

function blocksOf(page: string): Block[] {
  const text = readFileSync(join(ROOT, page), "utf8");
  const installs = [...text.matchAll(INSTALL_LINE)].map((match) => ({ at: match.index, line: match[0] }));
  return [...text.matchAll(/```(ts|typescript|tsx)\n([\s\S]*?)```/g)].map((match, index) => {
    const line = installs.filter((install) => install.at < match.index).at(-1)?.line ?? readmeInstall;
    const code = match[2]!;
    return {
      page,
      file: `${page.replace(/\W+/g, "_")}_${index + 1}.${match[1] === "tsx" ? "tsx" : "ts"}`,
      // A block without import/export is still a module (its names are its own, top-level await works).
      code: /^\s*(import|export)\s/m.test(code) ? code : `${code}\nexport {};\n`,
      install: parseInstall(line),
      server: /\.listen\(/.test(code),
    };
  });
}

const BLOCKS = PAGES.flatMap(blocksOf);
const setKey = (install: Block["install"]) => JSON.stringify([[...install.dependencies].sort(), [...install.devDependencies].sort()]);

interface App {
  dir: string;
  blocks: Block[];
  /** tsc's output with the stand-ins declared (must be empty). */
  typecheck: string;
}

/**
 * A stand-in the block uses without declaring it: read as a value (not a property name `name:`, not
 * a member `.name`), and declared by no `const`/`let`/`function`/`class`/`import` of the block.
 */
function standInsUsed(source: string): string[] {
  // Names in strings and comments are words, not uses.
  const code = source.replace(/"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'|`(?:\\.|[^`\\])*`/g, '""').replace(/\/\/[^\n]*|\/\*[\s\S]*?\*\//g, "");
  return Object.keys(STAND_INS).filter((name) => {
    const used = new RegExp(`(?<![.\\w$])${name}(?![\\w$])(?!\\s*:(?!:))`).test(code);
    const declared = new RegExp(`\\b(?:const|let|var|function|class)\\s+(?:\\{[^}]*\\b${name}\\b[^}]*\\}|\\[[^\\]]*\\b${name}\\b[^\\]]*\\]|${name}\\b)|\\bimport\\s+(?:type\\s+)?(?:${name}\\b|\\{[^}]*\\b${name}\\b[^}]*\\})`).test(code);
    return used && !declared;
  });
}

/** A block that stands alone runs as written; one that needs the reader's database (`DATABASE_URL`) is only typechecked. */
const standsAlone = (block: Block) => standInsUsed(block.code).length === 0 && !block.code.includes("DATABASE_URL");

const apps = new Map<string, App>();
let serve: ChildProcess | undefined;
let serveURL: string;
let packageDir: string;

const TSCONFIG = {
  compilerOptions: {
    target: "es2022",
    lib: ["es2023", "dom"],
    module: "nodenext",
    moduleResolution: "nodenext",
    jsx: "react-jsx",
    strict: true,
    skipLibCheck: true,
    outDir: "out",
    rootDir: ".",
  },
};

async function tsc(dir: string, project: string): Promise<string> {
  return run(process.execPath, [TSC, "-p", project], { cwd: dir }).then(
    () => "",
    (error: { stdout?: string }) => error.stdout ?? String(error),
  );
}

/**
 * Every install line's packages, installed once (one `npm install` is most of this test's time): the
 * union app. Each install line's app links only its own packages from there, so a block importing a
 * package its page does not install fails to resolve, as it would in the reader's app.
 */
async function installUnion(tarball: string, installs: Block["install"][]): Promise<string> {
  const dependencies = [...new Set(installs.flatMap((install) => install.dependencies))];
  const devDependencies = [...new Set(installs.flatMap((install) => install.devDependencies))].filter((name) => !dependencies.includes(name));
  // Install scripts skipped: better-sqlite3's would compile it from source for minutes (no prebuilt
  // binary is reachable here); it gets the checkout's own build of the same version instead.
  const union = await installByCommands("docs-all", tarball, [["install", ...dependencies], ...(devDependencies.length > 0 ? [["install", "-D", ...devDependencies]] : [])], ["--ignore-scripts"]);
  const sqlite = join(union, "node_modules", "better-sqlite3");
  if (existsSync(sqlite)) {
    const version = (dir: string) => (JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { version: string }).version;
    const ours = join(ROOT, "node_modules", "better-sqlite3");
    if (version(sqlite) === version(ours)) cpSync(join(ours, "build"), join(sqlite, "build"), { recursive: true });
    else await run("npm", ["rebuild", "better-sqlite3"], { cwd: union, timeout: 900_000 });
  }
  return union;
}

/** One app per install line: its packages linked from the union app, the page's blocks in it, typechecked (and compiled) with the stand-ins declared. */
async function buildApp(union: string, blocks: Block[]): Promise<App> {
  const { dependencies, devDependencies } = blocks[0]!.install;
  const dir = mkdtempSync(join(tmpdir(), "jianmu-docs-app-"));
  writeFileSync(join(dir, "package.json"), `${JSON.stringify({ name: "docs-app", private: true, type: "module" }, null, 2)}\n`);
  for (const name of [...dependencies, ...devDependencies]) {
    mkdirSync(dirname(join(dir, "node_modules", name)), { recursive: true });
    symlinkSync(join(union, "node_modules", name), join(dir, "node_modules", name), "dir");
  }
  for (const block of blocks) writeFileSync(join(dir, block.file), block.code);
  writeFileSync(join(dir, "stand-ins.d.ts"), `${Object.entries(STAND_INS).map(([name, type]) => `declare const ${name}: ${type};`).join("\n")}\n`);
  // TypeScript 6+ loads no @types package unless named: the app names the ones its install line added.
  const types = [...dependencies, ...devDependencies].filter((name) => name.startsWith("@types/")).map((name) => name.slice("@types/".length));
  writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions: { ...TSCONFIG.compilerOptions, types }, files: [...blocks.map((block) => block.file), "stand-ins.d.ts"] }, null, 2));
  return { dir, blocks, typecheck: await tsc(dir, "tsconfig.json") };
}

function freePort(): Promise<number> {
  return new Promise((resolvePort) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolvePort(port));
    });
  });
}

beforeAll(async () => {
  const tarball = await packTarball();
  // The page whose blocks start a server: its port, moved to a free one in all of its blocks.
  for (const page of new Set(BLOCKS.filter((block) => block.server).map((block) => block.page))) {
    const port = String(await freePort());
    for (const block of BLOCKS.filter((b) => b.page === page)) block.code = block.code.replaceAll("3000", port);
  }
  const bySet = new Map<string, Block[]>();
  for (const block of BLOCKS) bySet.set(setKey(block.install), [...(bySet.get(setKey(block.install)) ?? []), block]);
  const union = await installUnion(tarball, [...bySet.values()].map((blocks) => blocks[0]!.install));
  for (const [key, blocks] of bySet) apps.set(key, await buildApp(union, blocks));
  // jianmu serve, from the tarball as installed.
  packageDir = realpathSync(join([...apps.values()][0]!.dir, "node_modules", "jianmu"));
  serve = spawn(process.execPath, [join(packageDir, "dist", "cli", "main.js"), "serve"], { stdio: ["ignore", "pipe", "pipe"] });
  serveURL = await new Promise<string>((resolveUrl) => {
    let out = "";
    serve!.stdout!.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const found = /OPENAI_BASE_URL=(\S+)/.exec(out);
      if (found) resolveUrl(found[1]!);
    });
  });
});

afterAll(() => {
  serve?.kill("SIGTERM");
});

/** Run a compiled block with the model at `jianmu serve`; resolves with its exit code and output. */
function runBlock(app: App, block: Block): { child: ChildProcess; done: Promise<{ code: number | null; output: string }> } {
  const script = join(app.dir, "out", block.file.replace(/\.tsx?$/, ".js"));
  const child = spawn(process.execPath, [script], {
    cwd: app.dir,
    env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "", NO_COLOR: "1", OPENAI_BASE_URL: serveURL },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
  const done = new Promise<{ code: number | null; output: string }>((resolveRun) =>
    child.on("close", (code) => {
      clearTimeout(timer);
      resolveRun({ code, output });
    }),
  );
  return { child, done };
}

const appOf = (block: Block) => apps.get(setKey(block.install))!;

describe("the docs' TypeScript, in fresh apps built from the packed tarball", () => {
  it("finds the blocks of every page, each with an install line", () => {
    expect(BLOCKS.length).toBeGreaterThan(25);
    for (const block of BLOCKS) expect(block.install.dependencies, block.file).toEqual(expect.arrayContaining(["jianmu", "xstate", "zod", "openai"]));
  });

  it.each(PAGES.filter((page) => BLOCKS.some((block) => block.page === page)))("%s: every block typechecks strictly with only its install line's packages", (page) => {
    const mine = page.replace(/\W+/g, "_");
    // This page's blocks' errors, and any the app has elsewhere.
    const problems = [...new Set(BLOCKS.filter((block) => block.page === page).map(appOf))]
      .flatMap((app) => app.typecheck.split("\n"))
      .filter((line) => /error TS\d+/.test(line) && (line.startsWith(mine) || !/^\w+_md_\d+\.tsx?\(/.test(line)));
    expect(problems).toEqual([]);
  });

  it("every block that stands alone (it uses no stand-in) runs to its end against jianmu serve", async () => {
    const runnable = BLOCKS.filter(standsAlone);
    // README's API, testing.md's scripted model and loopback server, web.md's server and its client without React, at least.
    const named = (page: string, file: string) => runnable.some((block) => block.page === page && block.code.startsWith(`// file: ${file}\n`));
    expect(runnable.map((block) => block.file)).toEqual(expect.arrayContaining(["README_md_1.ts", "docs_testing_md_1.ts", "docs_testing_md_3.ts"]));
    expect([named("docs/web.md", "server.ts"), named("docs/web.md", "client.ts")]).toEqual([true, true]);
    for (const page of new Set(runnable.map((block) => block.page))) {
      const blocks = runnable.filter((block) => block.page === page);
      const servers = blocks.filter((block) => block.server).map((block) => ({ block, ...runBlock(appOf(block), block) }));
      try {
        // A server block is up once its port answers.
        for (const { block } of servers) {
          const port = Number(/listen\((\d+)/.exec(block.code)?.[1]);
          for (let i = 0; i < 200 && !(await fetch(`http://127.0.0.1:${port}/`).then(() => true, () => false)); i++) await new Promise((r) => setTimeout(r, 100));
        }
        for (const block of blocks.filter((b) => !b.server)) {
          const { code, output } = await runBlock(appOf(block), block).done;
          // A run that failed still exits 0 in a block that only prints its answer: it prints null (or undefined) then.
          expect({ block: block.file, code, output }).toEqual({ block: block.file, code: 0, output: expect.not.stringMatching(/Error|^(null|undefined)$/m) });
        }
      } finally {
        for (const { child } of servers) child.kill("SIGTERM");
      }
      for (const { block, done } of servers) expect((await done).output, block.file).not.toMatch(/Error/);
    }
  });
});

describe("the shipped docs' links", () => {
  it("every relative link of README.md and docs/*.md in the package resolves to a file inside the package", () => {
    const pages = ["README.md", ...readdirSync(join(packageDir, "docs")).filter((file) => file.endsWith(".md")).map((file) => `docs/${file}`)];
    expect(pages.length).toBeGreaterThan(5);
    const problems: string[] = [];
    for (const page of pages) {
      for (const match of readFileSync(join(packageDir, page), "utf8").matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = match[1]!;
        if (/^(https?:|mailto:|#)/.test(target)) continue;
        const path = resolve(packageDir, dirname(page), target.replace(/[#?].*$/, ""));
        if (relative(packageDir, path).startsWith("..") || !existsSync(path)) problems.push(`${page}: ${target}`);
      }
    }
    expect(problems).toEqual([]);
  });

  it("the package's manifest runs nothing at install (no install scripts)", () => {
    const shipped = JSON.parse(readFileSync(join(packageDir, "package.json"), "utf8")) as { scripts?: Record<string, string> };
    expect(Object.keys(shipped.scripts ?? {}).filter((name) => ["preinstall", "install", "postinstall", "prepare"].includes(name))).toEqual([]);
  });
});
