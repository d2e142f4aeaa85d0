import { useEffect, useState } from "react";
import { useAgent } from "../../../react.js";
import type { ImagePart } from "../../../index.js";
import { ApprovalCard } from "./ApprovalCard.js";
import { Attachments } from "./Attachments.js";
import { Conversation } from "./Conversation.js";
import { LiveChart } from "./LiveChart.js";

const API = "/api";
const AGENT = "payments";
const EXAMPLE_TASK = "Please pay invoice INV-1042 from Acme GmbH: EUR 1,250.";

/** The run this tab follows is kept in the address (?run=...), so a reload picks it up again. */
function runInAddress(): string | undefined {
  return new URLSearchParams(window.location.search).get("run") ?? undefined;
}

export function App() {
  const [initialRun] = useState(runInAddress);
  const agent = useAgent({ url: API, agent: AGENT, ...(initialRun ? { runId: initialRun } : {}) });
  const [task, setTask] = useState(EXAMPLE_TASK);
  // Images picked to go with the next message (a photo of the invoice, say): sent as image parts.
  const [images, setImages] = useState<ImagePart[]>([]);

  useEffect(() => {
    if (agent.runId && agent.runId !== runInAddress()) window.history.replaceState(null, "", `?run=${encodeURIComponent(agent.runId)}`);
  }, [agent.runId]);

  const busy = agent.status === "connecting" || agent.status === "streaming" || agent.status === "awaitingApproval" || agent.status === "reconnecting";
  // The stream is done either way; a run that ended without an answer is shown as failed.
  const shown = agent.status === "done" && agent.output?.status === "failed" ? "failed" : agent.status;
  const failure = agent.output?.termination;
  return (
    <main>
      <header>
        <div className="brand">jianmu · agents in a web app</div>
        <h1>
          Accounts payable
          <span className={`pill status-${shown}`} data-testid="client-status" data-status={agent.status} data-shown={shown}>
            {shown}
          </span>
        </h1>
        <div className="meta" data-testid="usage" data-total-tokens={agent.usage.totalTokens}>
          run {agent.runId ?? "—"} · {agent.usage.totalTokens} tokens · agent state {agent.state?.path ?? "—"}
        </div>
      </header>
      <div className="columns">
        <section className="chat">
          <Conversation agent={agent} />
          {agent.pendingApprovals.map((call) => (
            <ApprovalCard key={call.callId} call={call} onApprove={(args) => agent.approve(call.callId, args)} onReject={(reason) => agent.reject(call.callId, reason)} />
          ))}
          {agent.output && (
            <div className={`answer ${agent.output.status}`} data-testid="final-answer" data-status={agent.output.status}>
              <b>{agent.output.status === "succeeded" ? "Answer" : `The run failed (${failure?.reason ?? "unknown"})`}</b>
              {agent.output.finalAnswer ?? failure?.error?.message ?? failure?.detail ?? ""}
            </div>
          )}
          {agent.error && (
            <div className="problem" data-testid="problem">
              {agent.error}
            </div>
          )}
          <form
            className="ask"
            onSubmit={(event) => {
              event.preventDefault();
              if (task.trim() === "") return;
              agent.start(images.length > 0 ? [{ type: "text", text: task.trim() }, ...images] : task.trim());
              setImages([]);
            }}
          >
            <textarea data-testid="task" value={task} onChange={(event) => setTask(event.target.value)} rows={2} />
            <Attachments images={images} onChange={setImages} />
            <div className="buttons">
              <button type="submit" data-testid="send" disabled={busy}>
                Send
              </button>
              {busy && agent.runId && (
                <button type="button" className="secondary" data-testid="cancel" onClick={() => agent.cancel("stopped from the page")}>
                  Cancel run
                </button>
              )}
            </div>
          </form>
        </section>
        <section className="panel">
          <h2>The agent's statechart</h2>
          <p className="hint">Drawn by the run viewer's renderer; the states the run is in are outlined, the ones it passed through coloured.</p>
          <LiveChart url={API} agent={AGENT} runId={agent.runId} path={agent.state?.path} />
        </section>
      </div>
    </main>
  );
}
