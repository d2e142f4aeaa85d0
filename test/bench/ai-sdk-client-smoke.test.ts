import { execFile } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { buildDistIfMissing } from "../built-dist.js";

/*
 * Runs bench/ai-sdk-client.mjs at its smallest (`--smoke`): a row per `ai` major and answer, each
 * contender measured, AI SDK 6 and 7 both really loaded (their versions printed by the measuring
 * processes). The figures mean nothing at this size and are not asserted.
 */

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

describe("bench/ai-sdk-client.mjs", () => {
  beforeAll(() => {
    // The bench imports the compiled library, as a user would (npm ci builds it through `prepare`).
    buildDistIfMissing();
  });

  it("measures jianmu over the openai SDK, over fromAiSdk and the AI SDK's own loop, on AI SDK 6 and 7, whole and streamed", async () => {
    const { stdout, error, stderr } = await new Promise<{ stdout: string; error: Error | null; stderr: string }>((resolve) => {
      execFile(process.execPath, [join(ROOT, "bench", "ai-sdk-client.mjs"), "--smoke"], { cwd: ROOT, timeout: 120_000 }, (error, stdout, stderr) => resolve({ stdout, error, stderr }));
    });
    expect(error, stderr).toBeNull();
    for (const major of ["6", "7"]) {
      for (const answer of ["whole", "streamed"]) {
        expect(stdout).toMatch(new RegExp(`^\\| ${major}\\.\\d+\\.\\d+ \\(v\\d+\\.\\d+\\.\\d+\\) \\| ${answer} \\| \\d+ µs \\| \\d+ µs \\| \\d+ µs \\| \\d+\\.\\d\\d× \\|$`, "m"));
      }
    }
  }, 150_000);
});
