import { describe, expect, it } from "vitest";
import { mcpToolProvider } from "../../tools/mcp/mcp-provider.js";
import { McpOptionsError, type McpProviderOptions } from "../../tools/mcp/options.js";

const stdio = { type: "stdio", command: "node" } as const;

/** The error mcpToolProvider throws for these options (they are deliberately wrong). */
function problem(options: unknown): McpOptionsError {
  try {
    mcpToolProvider(options as McpProviderOptions);
  } catch (error) {
    if (error instanceof McpOptionsError) return error;
    throw error;
  }
  throw new Error("expected McpOptionsError");
}

describe("mcpToolProvider options", () => {
  it("accepts stdio and http servers without starting anything", () => {
    expect(mcpToolProvider({ name: "a", transport: stdio }).name).toBe("a");
    const http = mcpToolProvider({ name: "b", transport: { type: "http", url: "https://mcp.example.com/mcp", headers: { Authorization: "Bearer x" } } });
    expect(http.pid).toBeUndefined();
    expect(http.skipped).toEqual([]);
  });

  it.each([
    [undefined, "(all)", "must be an object"],
    [{ transport: stdio }, "name", "must be a string naming the server"],
    [{ name: "  ", transport: stdio }, "name", "must be a non-empty string"],
    [{ name: "a" }, "transport", 'must be { type: "stdio", command, args?, env?, cwd? } or { type: "http", url, headers? }'],
    [{ name: "a", transport: { type: "ws", url: "ws://x" } }, "transport.type", 'must be { type: "stdio"'],
    [{ name: "a", transport: { type: "stdio" } }, "transport.command", "must be a string: the executable that starts the server"],
    [{ name: "a", transport: { type: "stdio", command: "" } }, "transport.command", "must be a non-empty string"],
    [{ name: "a", transport: { type: "stdio", command: "node", args: "server.js" } }, "transport.args", "expected array"],
    [{ name: "a", transport: { type: "stdio", command: "node", env: { PORT: 3000 } } }, "transport.env.PORT", "must map each variable name to a string value"],
    [{ name: "a", transport: { type: "stdio", command: "node", comand: "x" } }, "transport.comand", "is not an option here"],
    [{ name: "a", transport: { type: "http", url: "localhost:3000" } }, "transport.url", "must be an http:// or https:// URL"],
    [{ name: "a", transport: { type: "http", url: "file:///etc/passwd" } }, "transport.url", "must be an http:// or https:// URL"],
    [{ name: "a", transport: stdio, prefix: "my tools." }, "prefix", "may hold only letters, digits, '_' and '-'"],
    [{ name: "a", transport: stdio, prefix: "p".repeat(49) }, "prefix", "at most 48 characters"],
    [{ name: "a", transport: stdio, filter: "echo" }, "filter", "must be a function (toolName) => boolean or an array"],
    [{ name: "a", transport: stdio, timeoutMs: 0 }, "timeoutMs", "must be a positive number of milliseconds"],
    [{ name: "a", transport: stdio, startupTimeoutMs: -5 }, "startupTimeoutMs", "must be a positive number of milliseconds"],
    [{ name: "a", transport: stdio, timeout: 5 }, "timeout", "is not an option here: check its spelling"],
    [{ name: "a", transport: stdio, retries: 0 }, "retries", "must be a whole number from 1 to 10"],
    [{ name: "a", transport: stdio, retries: 2.5 }, "retries", "must be a whole number from 1 to 10"],
    [{ name: "a", transport: stdio, retries: 2, retryDelayMs: -1 }, "retryDelayMs", "must be a number of milliseconds (0 or more)"],
    [{ name: "a", transport: stdio, retryDelayMs: 100 }, "retryDelayMs", "is only read with retries"],
  ])("rejects %j, naming %s", (options, field, text) => {
    const error = problem(options);
    expect(error.field).toBe(field);
    expect(error.message).toContain(`mcpToolProvider: options.${field} `);
    expect(error.message).toContain(text);
  });

  it("never puts header values in its errors", () => {
    const error = problem({ name: "a", transport: { type: "http", url: "nope", headers: { Authorization: "Bearer s3cret" } } });
    expect(error.message).not.toContain("s3cret");
  });

  it("answers getTools before initialize with an error naming the server", () => {
    const provider = mcpToolProvider({ name: "lazy", transport: stdio });
    expect(() => provider.getTools(undefined)).toThrow('MCP server "lazy" is not connected');
  });

  it("closes a provider that never started without complaint", async () => {
    await expect(Promise.resolve(mcpToolProvider({ name: "idle", transport: stdio }).close())).resolves.toBeUndefined();
  });
});
