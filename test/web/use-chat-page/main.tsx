/**
 * The smallest useChat page: the AI SDK's own hook with its default transport (it posts to
 * /api/chat, where the test mounts `handler.aiSdk("payments")`), and the AI SDK's helper that
 * sends the conversation again once every waiting call is answered. Nothing jianmu-specific but
 * the `data-jianmu-state` part it shows.
 */
import { useChat, type UIMessage } from "@ai-sdk/react";
import { getToolName, isToolUIPart, lastAssistantMessageIsCompleteWithApprovalResponses } from "ai";
import { useState } from "react";
import { createRoot } from "react-dom/client";

type Part = UIMessage["parts"][number];
type Answer = ReturnType<typeof useChat>["addToolApprovalResponse"];

function PartView({ part, answer }: { part: Part; answer: Answer }) {
  if (part.type === "text") return <p data-part="text">{part.text}</p>;
  if (part.type === "reasoning") return <p data-part="reasoning">{part.text}</p>;
  if (part.type === "data-jianmu-state") {
    const state = part.data as { path: string; status: string };
    return <p data-part="chart-state" data-path={state.path} data-status={state.status}>chart: {state.path} ({state.status})</p>;
  }
  if (!isToolUIPart(part)) return null;
  return (
    <div data-part="tool" data-tool={getToolName(part)} data-state={part.state}>
      {getToolName(part)} {JSON.stringify(part.input)} · {part.state}
      {part.state === "output-available" && <div data-testid="tool-output">{String(part.output)}</div>}
      {part.state === "approval-requested" && (
        <>
          <button data-testid="approve" onClick={() => void answer({ id: part.approval.id, approved: true })}>Approve</button>
          <button data-testid="reject" onClick={() => void answer({ id: part.approval.id, approved: false, reason: "that invoice is disputed" })}>Reject</button>
        </>
      )}
    </div>
  );
}

function Chat() {
  const { messages, sendMessage, addToolApprovalResponse, status, error } = useChat({ sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses });
  const [input, setInput] = useState("");
  return (
    <main>
      <p data-testid="chat-status" data-status={status}>status: {status}</p>
      {error && <p data-testid="error">{error.message}</p>}
      {messages.map((message) => (
        <div key={message.id} data-role={message.role} data-message-id={message.id}>
          {message.parts.map((part, i) => (
            <PartView key={i} part={part} answer={addToolApprovalResponse} />
          ))}
        </div>
      ))}
      <form
        onSubmit={(event) => {
          event.preventDefault();
          void sendMessage({ text: input });
          setInput("");
        }}
      >
        <input data-testid="input" value={input} onChange={(event) => setInput(event.target.value)} />
        <button data-testid="send" type="submit">Send</button>
      </form>
    </main>
  );
}

createRoot(document.getElementById("root")!).render(<Chat />);
