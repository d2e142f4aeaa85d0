import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { effectsOf } from "../../tools/mcp/mcp-tool.js";
import { assignToolNames, sanitizeToolName } from "../../tools/mcp/names.js";
import { base64Bytes, resultText } from "../../tools/mcp/result.js";
import { argsChecker, readableAjvText } from "../../tools/mcp/schema-check.js";

describe("tool names", () => {
  it("keeps valid names, prefixes them as given, and replaces what the model API rejects", () => {
    expect(assignToolNames(["echo", "get-sum"], "ev_")).toEqual([
      { name: "ev_echo", mcpName: "echo" },
      { name: "ev_get-sum", mcpName: "get-sum" },
    ]);
    expect(sanitizeToolName("fs/read.file v2")).toBe("fs_read_file_v2");
    expect(sanitizeToolName("")).toBe("tool");
  });

  it("gives clashing sanitized names numeric suffixes within 64 characters", () => {
    const long = "n".repeat(70);
    const names = assignToolNames([`${long}a`, `${long}b`, "a.b", "a/b"]).map((n) => n.name);
    expect(names).toEqual(["n".repeat(64), `${"n".repeat(62)}_2`, "a_b", "a_b_2"]);
  });

  it("always yields unique model-safe names that map back to every server name", () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.string({ maxLength: 80 }), { maxLength: 20 }), fc.stringMatching(/^[a-z_]{0,8}$/), (mcpNames, prefix) => {
        const named = assignToolNames(mcpNames, prefix);
        expect(named.map((n) => n.mcpName)).toEqual(mcpNames);
        for (const { name } of named) expect(name).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
        expect(new Set(named.map((n) => n.name)).size).toBe(named.length);
      }),
    );
  });
});

describe("annotations", () => {
  it("read the MCP defaults when a tool says nothing", () => {
    expect(effectsOf(undefined)).toEqual({ parallelSafe: false, effectTags: ["destructive", "network"], idempotent: false });
  });
  it("read-only tools are parallel-safe, idempotent and never destructive", () => {
    expect(effectsOf({ readOnlyHint: true, destructiveHint: true, openWorldHint: false })).toEqual({ parallelSafe: true, effectTags: [], idempotent: true });
  });
  it("a local writing tool can say it is neither destructive nor open-world", () => {
    expect(effectsOf({ readOnlyHint: false, destructiveHint: false, openWorldHint: false, idempotentHint: true })).toEqual({
      parallelSafe: false,
      effectTags: [],
      idempotent: true,
    });
  });
});

describe("argument checks", () => {
  const check = argsChecker({
    type: "object",
    properties: { tags: { type: "array", items: { type: "string" } }, when: { type: "string", format: "date" } },
    required: ["tags"],
    additionalProperties: false,
  });

  it("name the path of each problem", () => {
    expect(check({ tags: ["a", 2] })).toEqual({ ok: false, error: "tags.1: must be string" });
    expect(check({ tags: [], extra: 1 })).toEqual({ ok: false, error: "(arguments): must NOT have additional properties" });
    expect(check({ tags: [], when: "yesterday" })).toEqual({ ok: false, error: 'when: must match format "date"' });
    expect(check({ tags: ["a"], when: "2026-01-31" })).toEqual({ ok: true, value: { tags: ["a"], when: "2026-01-31" } });
  });

  it("joins several problems with semicolons", () => {
    expect(readableAjvText("data/a must be number, data must have required property 'b'")).toBe("a: must be number; (arguments): must have required property 'b'");
  });

  it("keep tools apart whose schemas share an $id", () => {
    const first = argsChecker({ $id: "input", type: "object", properties: { a: { type: "string" } } });
    const second = argsChecker({ $id: "input", type: "object", properties: { a: { type: "number" } } });
    expect(first({ a: "x" }).ok).toBe(true);
    expect(second({ a: "x" })).toEqual({ ok: false, error: "a: must be number" });
  });

  it("fall back to an object check when the schema cannot be compiled", () => {
    const lenient = argsChecker({ type: "object", properties: { a: { $ref: "#/definitions/missing" } } });
    expect(lenient({ a: 1 })).toEqual({ ok: true, value: { a: 1 } });
    expect(lenient("a")).toEqual({ ok: false, error: "(arguments): must be a JSON object" });
  });
});

describe("results", () => {
  it("measure base64 without decoding it", () => {
    for (const size of [0, 1, 2, 3, 4, 100, 1025]) expect(base64Bytes(Buffer.alloc(size).toString("base64"))).toBe(size);
  });

  it("say when a tool returned nothing", () => {
    expect(resultText({ content: [] })).toBe("(the tool returned no content)");
  });
});
