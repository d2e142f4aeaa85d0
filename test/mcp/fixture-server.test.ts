import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { human } from "../../actors/messages.js";
import type { AgentEmitted } from "../../machines/contract/events.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { runAgent } from "../../machines/runner.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import type { Tool, ToolContext } from "../../tools/tool.js";
import { McpServerError } from "../../tools/mcp/connection.js";
import type { McpToolProvider } from "../../tools/mcp/mcp-provider.js";
import { mcpToolProvider } from "../../tools/mcp/mcp-provider.js";
import { fixture, isRunning, tempDir } from "./helpers.js";

const ctx = (signal = new AbortController().signal): ToolContext => ({ signal, callId: "direct", state: {} });
const readLog = (file: string) => {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return "";
  }
};
/** Wait until the server has written a line (the test's own timeout bounds the wait). */
async function logLine(file: string, line: string): Promise<void> {
  while (!readLog(file).split("\n").includes(line)) await new Promise((resolve) => setTimeout(resolve, 20));
}

const LONG_NAME = `a_really_long_tool_name_${"x".repeat(50)}`;

describe("a paged server with awkward tool names (fixture over stdio)", () => {
  const temp = tempDir("jianmu-mcp-fixture-");
  const log = join(temp.dir, "calls.log");
  let provider: McpToolProvider;
  let tools: readonly Tool[];
  const byName = (name: string) => tools.find((tool) => tool.name === name)!;

  beforeAll(async () => {
    provider = fixture({ prefix: "fx_", env: { FIXTURE_PAGE_SIZE: "3", FIXTURE_LOG: log } });
    await provider.initialize(undefined);
    tools = await provider.getTools(undefined);
  });
  afterAll(async () => {
    await provider.close();
    temp.remove();
  });

  it("follows nextCursor through every page of the tool list", () => {
    expect(tools).toHaveLength(10);
  });

  it("prefixes and sanitizes names, never stealing a real tool's name, and maps them back", () => {
    expect(tools.map((t) => t.name)).toEqual([
      "fx_files_read_2",
      "fx_files_read",
      "fx___",
      `fx_${LONG_NAME}`.slice(0, 64),
      "fx_fails",
      "fx_bare",
      "fx_slow",
      "fx_mixed",
      "fx_empty",
      "fx_wipe",
    ]);
    expect(provider.mcpName("fx_files_read_2")).toBe("files.read");
    expect(provider.mcpName("fx_files_read")).toBe("files_read");
    expect(provider.mcpName("fx___")).toBe("名前");
    expect(provider.mcpName(`fx_${LONG_NAME}`.slice(0, 64))).toBe(LONG_NAME);
  });

  it("calls the server by its real name", async () => {
    expect(await byName("fx_files_read_2").execute({ path: "/etc/motd" }, ctx())).toBe("contents of /etc/motd");
    expect(await byName("fx___").execute({}, ctx())).toBe("called 名前");
    expect(readLog(log)).toContain('call files.read {"path":"/etc/motd"}');
  });

  it("reads a tool without annotations as the MCP spec does: writing, destructive, open-world", () => {
    expect(byName("fx_bare")).toMatchObject({ parallelSafe: false, effectTags: ["destructive", "network"] });
    expect(byName("fx_wipe")).toMatchObject({ parallelSafe: false, effectTags: ["destructive", "network"] });
    expect(byName("fx_mixed")).toMatchObject({ parallelSafe: true, effectTags: [] });
  });

  it("falls back to the title when the description is empty", () => {
    expect(byName("fx_bare").description).toBe("Bare tool");
  });

  it("validates against a 2020-12 schema too (the $schema line is dropped for the model and for Ajv)", () => {
    const wipe = byName("fx_wipe");
    expect(wipe.inputSchema).not.toHaveProperty("$schema");
    expect(wipe.validate({ target: 7 })).toEqual({ ok: false, error: "target: must be string" });
    expect(wipe.validate({ target: "the moon" }).ok).toBe(true);
    expect(wipe.validate([1])).toEqual({ ok: false, error: "(arguments): must be a JSON object" });
  });

  it("summarizes every non-text part in words, in order", async () => {
    expect(await byName("fx_mixed").execute({}, ctx())).toBe(
      [
        "Here is everything:",
        "[image: image/png, 300 bytes]",
        "[audio: audio/wav, 2.0 KB]",
        "[embedded resource: test://text/1, text/plain, 11 characters of text]",
        "[embedded resource: test://blob/1, application/octet-stream, 300 bytes]",
        "[resource link: Report <test://link/1>, application/pdf — the yearly report]",
      ].join("\n"),
    );
  });

  it("reads a result with only structured content as its JSON", async () => {
    expect(await byName("fx_empty").execute({}, ctx())).toBe('{"answer":42}');
  });

  it("turns isError into a thrown error carrying the tool's text", async () => {
    await expect(byName("fx_fails").execute({}, ctx())).rejects.toThrow("disk is full");
  });

  it("passes the call's abort signal to the server (notifications/cancelled)", async () => {
    const controller = new AbortController();
    const call = Promise.resolve(byName("fx_slow").execute({ ms: 30_000 }, ctx(controller.signal)));
    await logLine(log, 'call slow {"ms":30000}');
    controller.abort(new Error("the run was cancelled"));
    await expect(call).rejects.toThrow("the run was cancelled");
    await logLine(log, "cancelled slow");
  });
});

describe("the fixture inside an agent", () => {
  it("makes an isError result a failed call the model reads, and the loop goes on", async () => {
    const model = scriptedModel([{ toolCalls: [{ id: "c1", name: "fails", arguments: {} }] }, { content: "the disk is full" }]);
    const machine = createReactMachine({ modelClient: model, toolProviders: [fixture()] });
    const events: AgentEmitted[] = [];
    const output = await runAgent(machine, { messages: [human("go")] }, { onEvent: (e) => events.push(e) });
    expect(events.find((e) => e.type === "tool.call.failed")).toMatchObject({ name: "fails", errorKind: "threw", error: "fails failed: disk is full" });
    expect(output.messages.find((m) => m.role === "tool")).toMatchObject({ toolCallId: "c1", content: "Error: fails failed: disk is full" });
    expect(output.status).toBe("succeeded");
  });

  it("does not call the server when the arguments break its schema", async () => {
    const temp = tempDir("jianmu-mcp-bad-args-");
    const log = join(temp.dir, "calls.log");
    try {
      const model = scriptedModel([
        { toolCalls: [{ id: "bad", name: "bare", arguments: { n: 0 } }, { id: "good", name: "bare", arguments: { n: 2 } }] },
        { content: "done" },
      ]);
      const machine = createReactMachine({ modelClient: model, toolProviders: [fixture({ env: { FIXTURE_LOG: log } })] });
      const output = await runAgent(machine, { messages: [human("go")] });
      expect(output.messages.filter((m) => m.role === "tool")).toEqual([
        expect.objectContaining({ toolCallId: "bad", content: "Error: invalid arguments for bare: n: must be >= 1" }),
        expect.objectContaining({ toolCallId: "good", content: "n=2" }),
      ]);
      const calls = readLog(log).split("\n").filter((line) => line.startsWith("call "));
      expect(calls).toEqual(['call bare {"n":2}']);
    } finally {
      temp.remove();
    }
  });

  it("times a call out after timeoutMs and cancels it on the server", async () => {
    const temp = tempDir("jianmu-mcp-timeout-");
    const log = join(temp.dir, "calls.log");
    try {
      const model = scriptedModel([{ toolCalls: [{ id: "s", name: "slow", arguments: { ms: 30_000 } }] }, { content: "gave up" }]);
      const provider = fixture({ timeoutMs: 200, env: { FIXTURE_LOG: log } });
      const machine = createReactMachine({ modelClient: model, toolProviders: [provider] });
      const output = await runAgent(machine, { messages: [human("go")] });
      expect(output.messages.find((m) => m.role === "tool")).toMatchObject({ content: "Error: slow timed out after 200 ms" });
      await logLine(log, "cancelled slow");
    } finally {
      temp.remove();
    }
  });
});

describe("retries", () => {
  it("runs a failed or timed-out call of a read-only tool again, and never one of a tool that may have acted", async () => {
    const temp = tempDir("jianmu-mcp-retries-");
    const log = join(temp.dir, "calls.log");
    try {
      const provider = fixture({ timeoutMs: 200, retries: 2, retryDelayMs: 0, env: { FIXTURE_LOG: log } });
      await provider.initialize(undefined);
      const tools = await provider.getTools(undefined);
      await provider.close();
      // The server marks "fails" and "slow" read-only: they take the retries; "wipe" is destructive: it does not.
      expect(tools.find((t) => t.name === "fails")).toMatchObject({ idempotent: true, retries: 2, retryDelayMs: 0 });
      expect(tools.find((t) => t.name === "wipe")).not.toHaveProperty("retries");

      const model = scriptedModel([{ toolCalls: [{ id: "f", name: "fails", arguments: {} }, { id: "s", name: "slow", arguments: { ms: 30_000 } }] }, { content: "gave up" }]);
      const machine = createReactMachine({ modelClient: model, toolProviders: [fixture({ timeoutMs: 200, retries: 2, retryDelayMs: 0, env: { FIXTURE_LOG: log } })] });
      const events: AgentEmitted[] = [];
      const output = await runAgent(machine, { messages: [human("go")] }, { onEvent: (event) => events.push(event) });
      const retried = events.filter((e): e is Extract<AgentEmitted, { type: "tool.call.retrying" }> => e.type === "tool.call.retrying");
      expect(retried.map((e) => [e.name, e.attempt, e.errorKind])).toEqual([
        ["fails", 1, "threw"],
        ["fails", 2, "threw"],
        ["slow", 1, "timeout"],
        ["slow", 2, "timeout"],
      ]);
      // Three calls of each reached the server; each timed-out one was cancelled there.
      const calls = readLog(log).split("\n").filter((line) => line.startsWith("call "));
      expect(calls.filter((line) => line.startsWith("call fails")).length).toBe(3);
      expect(calls.filter((line) => line.startsWith("call slow")).length).toBe(3);
      await logLine(log, "cancelled slow");
      expect(output.messages.filter((m) => m.role === "tool").map((m) => m.content)).toEqual([expect.stringContaining("disk is full"), "Error: slow timed out after 200 ms"]);
    } finally {
      temp.remove();
    }
  });
});

describe("filters", () => {
  it("keeps the tools a function accepts, judged by the server's name", async () => {
    const provider = fixture({ prefix: "x-", filter: (name) => name.startsWith("files") });
    await provider.initialize(undefined);
    try {
      expect((await provider.getTools(undefined)).map((t) => t.name)).toEqual(["x-files_read_2", "x-files_read"]);
      expect(provider.skipped.map((s) => s.mcpName)).toContain("wipe");
    } finally {
      await provider.close();
    }
  });

  it("keeps the tools an array names", async () => {
    const provider = fixture({ filter: ["wipe", "mixed"] });
    await provider.initialize(undefined);
    try {
      expect((await provider.getTools(undefined)).map((t) => t.name)).toEqual(["mixed", "wipe"]);
    } finally {
      await provider.close();
    }
  });

  it("refuses an array naming a tool the server lacks, and the process does not stay behind", async () => {
    const provider = fixture({ filter: ["mixed", "mixd"] });
    const failure = await Promise.resolve(provider.initialize(undefined)).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(McpServerError);
    expect(String((failure as Error).message)).toMatch(/^MCP server "fixture" does not offer the tool\(s\) named in options\.filter: mixd\. It offers: files\.read, /);
    await provider.close();
    expect(isRunning(provider.pid!)).toBe(false);
  });
});

describe("the server process", () => {
  it("is shared by concurrent users and ends after the last close; closing again is harmless", async () => {
    const provider = fixture();
    await Promise.all([provider.initialize(undefined), provider.initialize(undefined)]);
    const pid = provider.pid!;
    await provider.close();
    expect(isRunning(pid)).toBe(true);
    await provider.close();
    expect(isRunning(pid)).toBe(false);
    await provider.close();
    // Initializing again starts a new process.
    await provider.initialize(undefined);
    expect(provider.pid).not.toBe(pid);
    expect(isRunning(provider.pid!)).toBe(true);
    await provider.close();
    expect(isRunning(provider.pid!)).toBe(false);
  });

  it("is killed when it ignores stdin closing and SIGTERM", async () => {
    const temp = tempDir("jianmu-mcp-linger-");
    const log = join(temp.dir, "calls.log");
    try {
      const provider = fixture({ env: { FIXTURE_LINGER: "1", FIXTURE_LOG: log } });
      await provider.initialize(undefined);
      const pid = provider.pid!;
      await provider.close();
      expect(readLog(log)).toContain("ignored SIGTERM");
      expect(isRunning(pid)).toBe(false);
    } finally {
      temp.remove();
    }
  }, 20_000);

  it("that dies mid-run turns later calls into errors naming the server", async () => {
    const provider = fixture();
    await provider.initialize(undefined);
    try {
      const tool = (await provider.getTools(undefined)).find((t) => t.name === "mixed")!;
      const exited = new Promise<void>((resolve) => {
        const check = () => (isRunning(provider.pid!) ? setTimeout(check, 10) : resolve());
        check();
      });
      process.kill(provider.pid!, "SIGKILL");
      await exited;
      await expect(Promise.resolve(tool.execute({}, ctx()))).rejects.toThrow(/^MCP server "fixture" is not available: the connection closed \(the server exited or dropped it\)$/);
    } finally {
      await provider.close();
    }
  });

  it("that fails to start gives an error naming the server and quoting its stderr", async () => {
    const provider = fixture({ env: { FIXTURE_FAIL_START: "1" } });
    const failure = await Promise.resolve(provider.initialize(undefined)).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(McpServerError);
    expect((failure as Error).message).toMatch(/^MCP server "fixture" could not be started: .+cannot open the database \/nowhere\/db\.sqlite$/);
    expect(provider.pid).toBeTypeOf("number");
    expect(isRunning(provider.pid!)).toBe(false);
    await provider.close();
  });

  it("that never answers fails after startupTimeoutMs and is ended", async () => {
    const provider = fixture({ startupTimeoutMs: 300, env: { FIXTURE_HANG: "1" } });
    await expect(Promise.resolve(provider.initialize(undefined))).rejects.toThrow(
      'MCP server "fixture" could not be started: no answer within 300 ms (options.startupTimeoutMs)',
    );
    expect(isRunning(provider.pid!)).toBe(false);
    await provider.close();
  }, 15_000);

  it("that hangs at start is given up as soon as the provider is closed, not after startupTimeoutMs", async () => {
    const provider = fixture({ startupTimeoutMs: 60_000, env: { FIXTURE_HANG: "1" } });
    const starting = Promise.resolve(provider.initialize(undefined)).catch((error: unknown) => error);
    while (provider.pid === undefined) await new Promise((resolve) => setTimeout(resolve, 10));
    await provider.close();
    const failure = await starting;
    // Had close waited for the start, this would take a minute and hit the test's 10 s limit.
    expect((failure as Error).message).toMatch(/^MCP server "fixture" could not be started: the provider was closed while the server was still starting/);
    expect(isRunning(provider.pid)).toBe(false);
  }, 10_000);

  it("that cannot be spawned gives an error naming the server and the command", async () => {
    const provider = mcpToolProvider({ name: "ghost", transport: { type: "stdio", command: "/nonexistent/mcp-server-binary" } });
    await expect(Promise.resolve(provider.initialize(undefined))).rejects.toThrow(/^MCP server "ghost" could not be started: .*ENOENT/);
    await provider.close();
  });
});
