import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it, vi } from "vitest";
import { toNodeListener } from "../../http.js";
import { ErrorBodySchema } from "../../web/protocol.js";

/**
 * `toNodeListener` serves any fetch-style handler. One that rejects (agentHandler never does: it
 * answers its own faults) may carry a database URL in its message: the client gets a generic 500
 * with an errorId, the process's log gets the text under that id (issue 34, H3).
 */
describe("toNodeListener: a handler that rejects", () => {
  let server: Server | undefined;
  afterEach(async () => {
    vi.restoreAllMocks();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    server = undefined;
  });

  it("answers 500 with an errorId and none of the error's text, which is logged under that id", async () => {
    const logged: string[] = [];
    vi.spyOn(console, "error").mockImplementation((...args: unknown[]) => void logged.push(args.map(String).join(" ")));
    server = createServer(
      toNodeListener(async () => {
        throw new Error("PostgreSQL at postgres://app@db.internal/prod?password=S3CRET: connection refused");
      }),
    );
    await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
    const answer = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/anything`);
    expect(answer.status).toBe(500);
    const text = await answer.text();
    expect(text).not.toMatch(/S3CRET|db\.internal|postgres:/);
    const { error } = ErrorBodySchema.parse(JSON.parse(text));
    expect(error).toMatchObject({ code: "internal_error", errorId: expect.stringMatching(/^[0-9a-f-]{36}$/) });
    expect(logged.find((line) => line.includes(error.errorId!))).toContain("connection refused");
  });
});
