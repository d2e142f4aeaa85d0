import { describe, expect, it } from "vitest";
import { EXAMPLE_MODES, runInMode } from "./support/live.js";
import { main, OFFLINE_TURNS } from "./durable-approval.js";

describe.each(EXAMPLE_MODES)("examples/durable-approval (%s)", (mode) => {
  it("parks in AwaitingApproval, survives a save/stop/restore through SQLite, then pays once", async () => {
    const lines: string[] = [];
    const { result, requests } = await runInMode(mode, OFFLINE_TURNS, (options) => main({ ...options, log: (line) => lines.push(line) }));
    const { output, parked, ledger } = result;
    expect(lines[0]!.startsWith(`${mode}: `)).toBe(true);
    if (mode === "live") expect(requests).toHaveLength(2);

    expect(parked).toHaveLength(1);
    expect(parked[0]).toMatchObject({ machine: "PaymentsAgent", status: "awaitingApproval", state: "Evaluating.ChildRunning.ToolExecutor.AwaitingApproval" });
    expect(output.runId).toBe(parked[0]!.runId);
    expect(output.status).toBe("succeeded");
    expect(output.finalAnswer).toBe("Invoice INV-1042 (EUR 1,250) is paid.");
    // Paid exactly once, after the restore (the first process stopped before any payment).
    expect(ledger).toEqual([{ invoice: "INV-1042", amountEur: 1250 }]);
    expect(lines.findIndex((line) => line.startsWith("approving pay_invoice"))).toBeGreaterThan(lines.findIndex((line) => line.startsWith("saved run")));
  });
});
