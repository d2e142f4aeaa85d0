import { readUIMessageStream, type DefaultChatTransport, type UIMessage, type UIMessageChunk } from "ai";

/**
 * The AI SDK's side of the chat tests: requests made as `useChat` makes them (`DefaultChatTransport`),
 * answers read with `ai`'s own `readUIMessageStream`, approvals answered as `addToolApprovalResponse` does.
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
