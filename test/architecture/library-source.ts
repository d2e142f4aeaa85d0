import { dirname, join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { SyntaxKind, type Node, type SourceFile } from "typescript/unstable/ast";
import { API } from "typescript/unstable/sync";

/** The repository root. */
export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** One file of the library as the compiler parsed it; `path` is relative to the root, with `/`. */
export interface LibraryFile {
  path: string;
  source: SourceFile;
}

/**
 * The library's own source, parsed by the TypeScript compiler (typescript 7's API, which runs the
 * compiler in a child process): exactly the files `tsconfig.build.json` builds into dist/, so every
 * module that ships, and nothing from test/, bench/ or examples/. Call `close()` when done.
 */
export function openLibrary(): { files: LibraryFile[]; close(): void } {
  const api = new API({ cwd: ROOT });
  const project = api.updateSnapshot({ openProject: join(ROOT, "tsconfig.build.json") }).getProjects()[0];
  if (!project) {
    api.close();
    throw new Error("tsconfig.build.json opened no project");
  }
  const files: LibraryFile[] = [];
  for (const name of project.program.getSourceFileNames()) {
    const path = relative(ROOT, name).split(sep).join("/");
    if (path.startsWith("..") || path.startsWith("node_modules/") || path.endsWith(".d.ts")) continue;
    const source = project.program.getSourceFile(name);
    if (source) files.push({ path, source });
  }
  files.sort((a, b) => a.path.localeCompare(b.path));
  return { files, close: () => api.close() };
}

/** Every node below `node`, depth first. */
export function forEachNode(node: Node, visit: (node: Node) => void): void {
  node.forEachChild((child) => {
    visit(child);
    forEachNode(child, visit);
  });
}

/** 1-based line of a position in a file. */
export function lineOf(source: SourceFile, position: number): number {
  return source.getLineAndCharacterOfPosition(position).line + 1;
}

export { SyntaxKind };
