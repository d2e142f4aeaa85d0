import { join, resolve } from "node:path";
import { build } from "vite";

/**
 * Bundle a TypeScript entry of these tests into one ESM file that plain `node` can run (the
 * child-process tests need the sources without vitest's transform). Packages stay external and
 * resolve from the project's node_modules, since the output lives inside the project.
 */
export async function bundleForNode(entry: string, outDir: string): Promise<string> {
  await build({
    configFile: false,
    logLevel: "silent",
    build: {
      ssr: resolve(entry),
      outDir: resolve(outDir),
      emptyOutDir: true,
      minify: false,
      target: "node20",
      rollupOptions: { output: { format: "es", entryFileNames: "[name].mjs" } },
    },
  });
  const name = entry.split("/").pop()!.replace(/\.ts$/, ".mjs");
  return join(resolve(outDir), name);
}
