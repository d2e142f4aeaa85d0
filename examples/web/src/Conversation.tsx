import type { UseAgentResult } from "../../../react.js";
import { MessageContent } from "./MessageContent.js";

/** The messages, with each tool call shown under the assistant turn that asked for it. */
export function Conversation({ agent }: { agent: UseAgentResult }) {
  const calls = new Map(agent.toolCalls.map((call) => [call.callId, call]));
  return (
    <div className="conversation" data-testid="conversation" data-deltas={agent.deltas}>
      {agent.messages.map((message, index) => {
        if (message.role === "system" || message.role === "tool") return null;
        if (message.role === "user") {
          return (
            <div key={index} className="bubble user" data-message-role="user">
              <MessageContent content={message.content} />
            </div>
          );
        }
        return (
          <div key={index} className="turn">
            {message.content && (
              <div className="bubble assistant" data-message-role="assistant">
                {message.content}
              </div>
            )}
            {(message.toolCalls ?? []).map((call) => {
              const view = calls.get(call.id);
              return (
                <div key={call.id} className={`tool ${view?.status ?? "running"}`} data-testid="tool-call" data-call-id={call.id} data-status={view?.status ?? "running"}>
                  <div className="tool-head">
                    <code>{call.name}</code> <span className="tool-status">{view?.status ?? "running"}</span>
                  </div>
                  <pre>{call.arguments}</pre>
                  {view?.output !== undefined && <div className="tool-output">→ {view.output}</div>}
                </div>
              );
            })}
          </div>
        );
      })}
      {agent.streamingText !== "" && (
        <div className="bubble assistant streaming" data-testid="streaming">
          {agent.streamingText}
          <span className="caret" />
        </div>
      )}
    </div>
  );
}
