import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { entryPoints, manifest, packedFiles, ROOT } from "./package-manifest.js";
import { packTarball } from "./packed-app.js";

// Several real processes per test, on a machine the whole suite shares.
vi.setConfig({ testTimeout: 90_000, hookTimeout: 90_000 });

/** What `npm pack --dry-run --json` lists: the published package, checked against what it must hold. */
describe("the published tarball", () => {
  let files: string[];
  beforeAll(() => {
    files = packedFiles();
  });

  it("holds every entry point's code and types, and the bin", () => {
    for (const entry of entryPoints()) {
      expect(files, entry.specifier).toContain(entry.code.replace(/^\.\//, ""));
      expect(files, entry.specifier).toContain(entry.types.replace(/^\.\//, ""));
    }
    for (const bin of Object.values(manifest.bin)) expect(files).toContain(bin.replace(/^\.\//, ""));
  });

  it("exports ./package.json", () => {
    expect(manifest.exports["./package.json"]).toBe("./package.json");
    expect(files).toContain("package.json");
  });

  it("ships no source maps, and no file points at one", () => {
    expect(files.filter((file) => file.endsWith(".map"))).toEqual([]);
    const pointing = files.filter((file) => /\.(js|d\.ts)$/.test(file) && readFileSync(join(ROOT, file), "utf8").includes("sourceMappingURL="));
    expect(pointing).toEqual([]);
  });

  it("ships the docs: README, LICENSE and every page of docs/", () => {
    expect(files).toEqual(expect.arrayContaining(["README.md", "LICENSE"]));
    const pages = readdirSync(join(ROOT, "docs")).filter((file) => file.endsWith(".md"));
    expect(pages.length).toBeGreaterThan(3);
    for (const page of pages) expect(files).toContain(`docs/${page}`);
  });

  it("ships only the fixtures the offline demo replays (and their sources page)", () => {
    const demos = readFileSync(join(ROOT, "cli", "demos.ts"), "utf8");
    const replayed = [...demos.matchAll(/recording: "([^"]+)"/g)].map((match) => match[1]!);
    expect(replayed.length).toBeGreaterThan(0);
    for (const recording of replayed) expect(existsSync(join(ROOT, recording)), recording).toBe(true);
    const fixtures = files.filter((file) => file.startsWith("test/"));
    expect(fixtures.sort()).toEqual([...replayed, "test/fixtures/openai/SOURCES.md"].sort());
  });

  it("ships no tests, examples, bench or TypeScript sources", () => {
    expect(files.filter((file) => /^(examples|bench)\//.test(file) || /\.test\.|\.spec\./.test(file))).toEqual([]);
    expect(files.filter((file) => file.endsWith(".ts") && !file.endsWith(".d.ts"))).toEqual([]);
  });

  it("publishes the manifest without the checkout's scripts (build, demo, bench...): prepack strips them, postpack puts them back", async () => {
    expect(Object.keys(manifest.scripts ?? {})).toEqual(expect.arrayContaining(["prepack", "postpack", "demo", "bench"]));
    const tarball = await packTarball();
    const shipped = JSON.parse(execFileSync("tar", ["-xzOf", tarball, "package/package.json"], { encoding: "utf8" })) as typeof manifest;
    expect(shipped.scripts).toBeUndefined();
    expect({ ...shipped, scripts: manifest.scripts }).toEqual(manifest);
  });
});
