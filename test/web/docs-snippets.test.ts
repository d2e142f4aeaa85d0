import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

/**
 * The TypeScript snippets of docs/web.md (the blocks starting with `// file: name`) compile, as a
 * user would write them: importing "jianmu", "jianmu/http" and "jianmu/react" from the built
 * package (`npm run build` first; `npm test` does it).
 */
const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

function snippets(): { file: string; code: string }[] {
  const text = readFileSync(join(root, "docs/web.md"), "utf8");
  return [...text.matchAll(/```tsx?\n\/\/ file: ([\w.-]+)\n([\s\S]*?)```/g)].map((m) => ({ file: m[1]!, code: m[2]! }));
}

describe("docs/web.md", () => {
  it("has the server, bounded, replicas, page, client, useChat and AG-UI snippets, and they compile against the package's exports", () => {
    const found = snippets();
    expect(found.map((s) => s.file)).toEqual(["server.ts", "bounded.ts", "replicas.ts", "Chat.tsx", "client.ts", "route.ts", "AiSdkChat.tsx", "ag-ui.ts"]);
    if (!existsSync(join(root, "dist/http.d.ts"))) throw new Error("dist/ is missing: run `npm run build` first");
    // Inside the project, so "jianmu" resolves to this package (its exports map) and its node_modules.
    const dir = join(root, "test-output", "docs-web");
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    for (const { file, code } of found) writeFileSync(join(dir, file), code);
    writeFileSync(
      join(dir, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          target: "es2022",
          lib: ["es2023", "dom"],
          module: "nodenext",
          moduleResolution: "nodenext",
          strict: true,
          noEmit: true,
          skipLibCheck: true,
          jsx: "react-jsx",
          types: ["node"],
        },
        files: found.map((s) => s.file),
      }),
    );
    const tsc = join(dirname(createRequire(import.meta.url).resolve("typescript/package.json")), "bin", "tsc");
    const result = spawnSync(process.execPath, [tsc, "-p", join(dir, "tsconfig.json")], { cwd: dir, encoding: "utf8" });
    expect(`${result.stdout}${result.stderr}`).toBe("");
    expect(result.status).toBe(0);
  });
});
