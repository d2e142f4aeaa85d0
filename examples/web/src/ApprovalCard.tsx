import { useState } from "react";
import type { PendingApprovalView } from "../../../http.js";

/** A call waiting for the person: its arguments can be edited before approving. */
export function ApprovalCard({ call, onApprove, onReject }: { call: PendingApprovalView; onApprove: (args?: string) => void; onReject: (reason?: string) => void }) {
  const original = pretty(call.arguments);
  const [args, setArgs] = useState(original);
  const edited = args.trim() !== original.trim();
  return (
    <div className="approval" data-testid="approval" data-call-id={call.callId}>
      <div className="approval-head">
        Approve <code>{call.name}</code>?{call.reason && <span className="reason"> {call.reason}</span>}
      </div>
      <textarea data-testid="approval-args" value={args} onChange={(event) => setArgs(event.target.value)} rows={4} spellCheck={false} />
      <div className="buttons">
        <button type="button" data-testid="approve" onClick={() => onApprove(edited ? args : undefined)}>
          {edited ? "Approve edited call" : "Approve"}
        </button>
        <button type="button" className="secondary" data-testid="reject" onClick={() => onReject("rejected from the page")}>
          Reject
        </button>
      </div>
    </div>
  );
}

function pretty(json: string): string {
  try {
    return JSON.stringify(JSON.parse(json), null, 2);
  } catch {
    return json;
  }
}
