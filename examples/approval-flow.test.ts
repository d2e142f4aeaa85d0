import { describe, expect, it } from "vitest";
import { EXAMPLE_MODES, runInMode } from "./support/live.js";
import { main, OFFLINE_TURNS } from "./approval-flow.js";

describe.each(EXAMPLE_MODES)("examples/approval-flow (%s)", (mode) => {
  it("runs the approved call with the edited arguments and tells the model about the rejected one", async () => {
    const { result, requests } = await runInMode(mode, OFFLINE_TURNS, (options) => main({ ...options, log: () => {} }));
    const { output, events, files, trash } = result;
    if (mode === "live") expect(requests).toHaveLength(2);

    expect(output.status).toBe("succeeded");
    expect(output.rounds).toBe(2);
    // Approved with edited args: moved to the trash, not deleted. Rejected: still there.
    expect(trash).toEqual(["drafts/old-notes.txt"]);
    expect(files).toEqual(["drafts/outline.md", "contracts/signed-2026.pdf"]);

    expect(events).toEqual([
      'approval requested: delete_file {"path":"drafts/old-notes.txt"} (delete_file needs approval before it runs (it is tagged destructive))',
      'approval requested: delete_file {"path":"contracts/signed-2026.pdf"} (delete_file needs approval before it runs (it is tagged destructive))',
      "approval decided: call_del_1 approved with edited arguments",
      "approval decided: call_del_2 rejected: contracts are kept for ten years: do not delete them",
      "tool denied: delete_file (rejected): contracts are kept for ten years: do not delete them",
      expect.stringMatching(/^tool started: delete_file .*"moveToTrash":true/),
      "tool completed: delete_file → moved drafts/old-notes.txt to the trash",
      "run succeeded after 2 rounds",
    ]);

    // What the model read in round 2: one result, one rejection carrying the approver's reason.
    const observations = output.messages.filter((message) => message.role === "tool");
    expect(observations.map((message) => message.toolCallId)).toEqual(["call_del_1", "call_del_2"]);
    expect(observations[0]!.content).toContain("moved drafts/old-notes.txt to the trash");
    expect(observations[1]!.content).toContain("contracts are kept for ten years");
  });
});
