import { describe, expect, it, vi } from "vitest";
import { cleanEnv, runCli, runCliInTerminal } from "./cli-harness.js";

// Real CLI processes (some under a pseudo-terminal) on a machine the whole suite shares.
vi.setConfig({ testTimeout: 60_000 });

const count = (text: string, part: string) => text.split(part).length - 1;

/** Each thing the CLI has to say, said once, and only what the CLI user can act on. */
describe("the local run's messages", () => {
  it("without a terminal, the reason an approval was rejected is printed once (in the rejection's line)", async () => {
    const result = await runCli(["run", "--require-approval", "get_weather"]);
    expect(count(result.stderr, "approval is required but there is no terminal to ask on")).toBe(1);
    expect(result.stderr).toMatch(/⊘ get_weather rejected: approval is required but there is no terminal to ask on/);
  });

  it("at the prompt, an edit that is not JSON is refused in one line, then asked again", async () => {
    const result = await runCliInTerminal(["run", "--require-approval", "get_weather"], ["e", "{bad json", "y"], { env: { NO_COLOR: "1" } });
    expect(result.code).toBe(0);
    expect(count(result.stdout, "the edited arguments are not valid JSON")).toBe(1);
    expect(result.stdout).toContain("  edit refused: the edited arguments are not valid JSON");
  });

  it("the offline demo says that its replayed answer does not follow a rejection", async () => {
    const result = await runCli(["run", "--require-approval", "get_weather"]);
    expect(result.stderr).toContain("offline replay: the recorded answers do not change with your decision (call_");
    // Approved as asked, the replay is what was recorded: nothing to say.
    const approved = await runCli(["run", "--require-approval", "get_weather", "--yes"]);
    expect(approved.stderr).not.toContain("offline replay: the recorded answers");
  });

  it("--inspect under NODE_ENV=production says what a CLI user can do (the CLI has no force option)", async () => {
    const result = await runCli(["run", "--inspect"], { env: cleanEnv({ NODE_ENV: "production" }) });
    expect(result.code).toBe(0);
    expect(result.stderr).toContain('--inspect: NODE_ENV is "production" and the inspector is a development tool; run without NODE_ENV=production to use it. The run goes on without it.');
    expect(result.stderr).not.toContain("force");
  });
});
