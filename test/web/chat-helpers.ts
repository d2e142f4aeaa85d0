import type { AgentSubscriber, HttpAgent } from "@ag-ui/client";
import type { BaseEvent, Message as AgUiMessage } from "@ag-ui/core";
import { readUIMessageStream, type DefaultChatTransport, type UIMessage, type UIMessageChunk } from "ai";

/**
 * The clients' side of the chat tests. The AI SDK's: requests made as `useChat` makes them
 * (`DefaultChatTransport`), answers read with `ai`'s own `readUIMessageStream`, approvals answered as
 * `addToolApprovalResponse` does. AG-UI's: `@ag-ui/client`'s `HttpAgent`, every event noted.
 */

export interface Turn {
  message: UIMessage;
  chunks: UIMessageChunk[];
}

/** One request as useChat makes it: the whole conversation; the answer read into (or onto) the assistant message. */
export async function send(transport: DefaultChatTransport<UIMessage>, messages: UIMessage[]): Promise<Turn> {
  const last = messages[messages.length - 1]!;
  const stream = await transport.sendMessages({ chatId: "chat-1", messages, trigger: "submit-message", messageId: last.role === "assistant" ? last.id : undefined, abortSignal: undefined });
  const chunks: UIMessageChunk[] = [];
  const recorded = stream.pipeThrough(
    new TransformStream<UIMessageChunk, UIMessageChunk>({
      transform(chunk, controller) {
        chunks.push(chunk);
        controller.enqueue(chunk);
      },
    }),
  );
  let message: UIMessage | undefined;
  for await (const next of readUIMessageStream({ stream: recorded, ...(last.role === "assistant" ? { message: structuredClone(last) } : {}), terminateOnError: true })) message = next;
  return { message: message!, chunks };
}

export const user = (id: string, text: string): UIMessage => ({ id, role: "user", parts: [{ type: "text", text }] });

export type ToolPart = Extract<UIMessage["parts"][number], { toolCallId: string }>;
export const toolParts = (message: UIMessage) => message.parts.filter((part): part is ToolPart => "toolCallId" in part);
export const textOf = (message: UIMessage) => message.parts.flatMap((part) => (part.type === "text" ? [part.text] : [])).join("|");
export const chartState = (message: UIMessage) => message.parts.find((part) => part.type === "data-jianmu-state") as { data: { path: string; status: string } } | undefined;

/** What addToolApprovalResponse does to the message: the part answered, state approval-responded. */
export function answer(message: UIMessage, approved: boolean, reason?: string): UIMessage {
  const parts = message.parts.map((part): UIMessage["parts"][number] =>
    "toolCallId" in part && part.state === "approval-requested" ? { ...part, state: "approval-responded", approval: { id: part.approval.id, approved, ...(reason ? { reason } : {}) } } : part,
  );
  return { ...message, parts };
}

/** Run an AG-UI agent once, noting every event it received. */
export async function runAgUi(agent: HttpAgent, parameters: Parameters<HttpAgent["runAgent"]>[0] = {}) {
  const events: BaseEvent[] = [];
  const subscriber: AgentSubscriber = { onEvent: ({ event }) => void events.push(event) };
  const result = await agent.runAgent(parameters, subscriber);
  return { result, events, types: events.map((event): string => event.type) };
}

/** The assistant's text of an AG-UI thread, message by message. */
export const agUiText = (messages: AgUiMessage[]) => messages.flatMap((m) => (m.role === "assistant" && typeof m.content === "string" && m.content !== "" ? [m.content] : [])).join("|");
