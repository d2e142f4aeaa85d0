import { describe, expect, it } from "vitest";
import { main } from "./durable-approval.js";

describe("examples/durable-approval", () => {
  it("parks in AwaitingApproval, survives a save/stop/restore through SQLite, then pays once", async () => {
    const lines: string[] = [];
    const { output, parked, ledger } = await main({ mode: "offline", log: (line) => lines.push(line) });

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
