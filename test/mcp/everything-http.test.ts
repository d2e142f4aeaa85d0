import { spawn, type ChildProcess } from "node:child_process";
import { createServer } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { human } from "../../actors/messages.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { runAgent } from "../../machines/runner.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import { mcpToolProvider } from "../../tools/mcp/mcp-provider.js";
import { EVERYTHING_SERVER, isRunning } from "./helpers.js";

/** A port nobody listens on right now (the OS picks it; the server takes it a moment later). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      probe.close(() => (typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port"))));
    });
  });
}

/** Resolve once the process has printed a line containing `text` on stdout or stderr. */
function printed(child: ChildProcess, text: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let seen = "";
    const onData = (chunk: Buffer) => {
      seen += chunk.toString();
      if (seen.includes(text)) resolve();
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.once("exit", (code) => reject(new Error(`the server exited (${code}) before printing "${text}": ${seen}`)));
  });
}

describe("server-everything over streamable HTTP", () => {
  let server: ChildProcess;
  let url: string;
  let output = "";

  beforeAll(async () => {
    const port = await freePort();
    url = `http://127.0.0.1:${port}/mcp`;
    server = spawn(process.execPath, [EVERYTHING_SERVER, "streamableHttp"], {
      env: { PATH: process.env["PATH"] ?? "", PORT: String(port) },
      stdio: ["ignore", "pipe", "pipe"],
    });
    server.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    await printed(server, `listening on port ${port}`);
  });

  afterAll(async () => {
    const exited = new Promise((resolve) => server.once("exit", resolve));
    server.kill("SIGKILL");
    await exited;
  });

  it("lists and calls the server's tools, and ends the session on close", async () => {
    const provider = mcpToolProvider({ name: "everything-http", transport: { type: "http", url, headers: { "X-Test": "jianmu" } }, prefix: "web_" });
    const model = scriptedModel([
      { toolCalls: [{ id: "e", name: "web_echo", arguments: { message: "over http" } }, { id: "s", name: "web_get-sum", arguments: { a: 1, b: 1 } }] },
      { content: "done" },
    ]);
    const machine = createReactMachine({ modelClient: model, toolProviders: [provider] });
    const result = await runAgent(machine, { messages: [human("go")] });

    expect(model.requests[0]!.tools.map((t) => t.function.name)).toEqual(expect.arrayContaining(["web_echo", "web_get-sum", "web_get-env"]));
    expect(result.messages.filter((m) => m.role === "tool").map((m) => m.content)).toEqual(["Echo: over http", "The sum of 1 and 1 is 2."]);
    expect(provider.pid).toBeUndefined();
    // Close deleted the session on the server (its log line may trail the HTTP response a little).
    while (!/Received session termination request for session [0-9a-f-]+/.test(output)) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(isRunning(server.pid!)).toBe(true);
  });

  it("fails to start with an error naming the server when nothing listens at the URL", async () => {
    const port = await freePort();
    const provider = mcpToolProvider({
      name: "nowhere",
      transport: { type: "http", url: `http://127.0.0.1:${port}/mcp`, headers: { Authorization: "Bearer s3cret-token" } },
    });
    const failure = await Promise.resolve(provider.initialize(undefined)).catch((error: unknown) => error as Error);
    expect(failure?.message).toMatch(/^MCP server "nowhere" could not be started: /);
    expect(failure?.message).not.toContain("s3cret-token");
    await provider.close();
  });
});
