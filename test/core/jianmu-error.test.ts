import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { toErrorInfo } from "../../actors/errors.js";
import { JianmuError, isJianmuError, ModelError, ConfigError, MachineOptionsError } from "../../index.js";

const root = join(import.meta.dirname, "..", "..");
/** Every public entry point (package.json `exports`), loaded from source. */
const ENTRIES: Record<string, () => Promise<object>> = {
  jianmu: () => import("../../index.js"),
  "jianmu/testing": () => import("../../testing.js"),
  "jianmu/mcp": () => import("../../mcp.js"),
  "jianmu/sqlite": () => import("../../sqlite.js"),
  "jianmu/inspect": () => import("../../inspect.js"),
  "jianmu/otel": () => import("../../otel.js"),
  "jianmu/http": () => import("../../http.js"),
  "jianmu/react": () => import("../../react.js"),
  "jianmu/client": () => import("../../client.js"),
  "jianmu/postgres": () => import("../../postgres.js"),
  "jianmu/ai-sdk": () => import("../../ai-sdk.js"),
};

type ErrorClass = (abstract new (...args: never[]) => Error) & { errorCode?: unknown };

async function exportedErrorClasses(): Promise<Map<ErrorClass, string[]>> {
  const classes = new Map<ErrorClass, string[]>();
  for (const [entry, load] of Object.entries(ENTRIES)) {
    const module = (await load()) as Record<string, unknown>;
    for (const [name, value] of Object.entries(module)) {
      if (typeof value !== "function" || !(value.prototype instanceof Error)) continue;
      const where = classes.get(value as ErrorClass) ?? [];
      classes.set(value as ErrorClass, [...where, `${entry}.${name}`]);
    }
  }
  return classes;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return ["node_modules", "dist", "test", "bench", "examples", ".git"].includes(name) ? [] : sourceFiles(path);
    return /\.tsx?$/.test(name) && !name.endsWith(".d.ts") ? [path] : [];
  });
}

describe("JianmuError: one base, a stable code per class", () => {
  it("every exported error class is a JianmuError with its own code", async () => {
    const classes = await exportedErrorClasses();
    // The entry points export many: the walk must have found them (not an empty map passing by default).
    expect(classes.size).toBeGreaterThan(25);
    const codes = new Map<string, string>();
    for (const [errorClass, where] of classes) {
      if (errorClass === (JianmuError as unknown as ErrorClass)) continue;
      expect(errorClass.prototype instanceof JianmuError, `${where.join(", ")} extends JianmuError`).toBe(true);
      const code = errorClass.errorCode;
      expect(code, `${where[0]} has a code`).toMatch(/^[A-Z][A-Z0-9_]+$/);
      expect(codes.get(code as string), `${where[0]}'s code ${String(code)} is its own`).toBeUndefined();
      codes.set(code as string, where[0]!);
    }
    expect(JianmuError.errorCode).toBe("JIANMU_ERROR");
    expect(codes.has("JIANMU_ERROR")).toBe(false);
  });

  it("the walk covers every entry point of package.json", () => {
    const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { exports: Record<string, unknown> };
    const entries = Object.keys(pkg.exports).filter((key) => key !== "./package.json").map((key) => (key === "." ? "jianmu" : `jianmu/${key.slice(2)}`));
    expect(Object.keys(ENTRIES).sort()).toEqual(entries.sort());
  });

  it("no class in the library's source extends Error directly", () => {
    const direct = sourceFiles(root)
      .filter((path) => !path.endsWith(join("tools", "jianmu-error.ts")))
      .flatMap((path) => [...readFileSync(path, "utf8").matchAll(/class (\w+) extends Error\b/g)].map((m) => `${relative(root, path)}: ${m[1]}`));
    expect(direct).toEqual([]);
  });

  it("an instance carries its class's code; name, message and serialized fields stay as they were", () => {
    const model = new ModelError("rate limited", { kind: "http", status: 429, code: "rate_limit_exceeded" });
    expect(model).toBeInstanceOf(JianmuError);
    expect(isJianmuError(model)).toBe(true);
    expect(isJianmuError(new Error("plain"))).toBe(false);
    expect(model.errorCode).toBe("MODEL_ERROR");
    // The server's code keeps its own field.
    expect(model.code).toBe("rate_limit_exceeded");
    expect(model.name).toBe("ModelError");
    expect(toErrorInfo(model)).toEqual({ name: "ModelError", message: "rate limited", kind: "http", status: 429, code: "rate_limit_exceeded" });
    expect(Object.keys(model)).not.toContain("errorCode");

    const options = new MachineOptionsError("name", "must start with a letter");
    expect(options.errorCode).toBe("MACHINE_OPTIONS_ERROR");
    expect(options.message).toBe("createReactMachine: options.name must start with a letter");
    expect(new ConfigError("max_iterations", -1, "jianmu.yaml", "must be positive").errorCode).toBe("CONFIG_ERROR");
  });
});
