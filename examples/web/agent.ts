/**
 * The agent behind the web example: an accounts-payable assistant whose one tool, pay_invoice,
 * needs a person's approval. Offline it talks to a loopback OpenAI-compatible server whose
 * scripted model reads the task: it says what it will do, asks to pay the invoice it found in
 * the task, and once the tool answered, reports the result.
 */
import { z } from "zod";
import { createReactMachine, defineTool, requireApproval, type ModelClient, type ToolJournal } from "../../index.js";
import type { ReceivedRequest, Respond } from "../../testing.js";
import type { OfflineReplay } from "../support/endpoint.js";
import { textTurn, toolCallTurn } from "../support/turns.js";

export const AGENT_NAME = "payments";
export const MACHINE_NAME = "PaymentsAssistant";

export interface Payment {
  invoice: string;
  amountEur: number;
}

export interface WebAssistantOptions {
  modelClient: ModelClient;
  /** The checkpoint store as the tool journal: a restored run never pays twice. */
  journal?: ToolJournal;
  /** Told of every payment made (a stand-in for the bank). */
  onPayment?: (payment: Payment) => void;
}

/** The assistant's one tool: a payment, tagged so that the approval rule below applies to it. */
export function payInvoiceTool(onPayment?: (payment: Payment) => void) {
  return defineTool({
    name: "pay_invoice",
    description: "Pay a supplier invoice by bank transfer.",
    parameters: z.object({ invoice: z.string().regex(/^INV-\d+$/, "must look like INV-1042"), amountEur: z.number().positive() }),
    effectTags: ["payment"],
    execute: ({ invoice, amountEur }) => {
      onPayment?.({ invoice, amountEur });
      return `transfer of EUR ${amountEur} for ${invoice} sent`;
    },
  });
}

/** Every payment waits for a person. */
export const paymentsNeedApproval = requireApproval({ effectTags: ["payment"], reason: "payments need a second pair of eyes" });

export function createWebAssistant(options: WebAssistantOptions) {
  const payInvoice = payInvoiceTool(options.onPayment);
  return createReactMachine({
    name: MACHINE_NAME,
    modelClient: options.modelClient,
    config: { systemPrompt: "You pay supplier invoices. Every payment needs the user's approval." },
    configFile: false,
    tools: [payInvoice],
    constraints: [paymentsNeedApproval],
    ...(options.journal ? { journal: options.journal } : {}),
  });
}

type WirePart = { type: string; text?: string; image_url?: { url: string } };
type WireMessage = { role: string; content?: string | WirePart[] | null; tool_call_id?: string };

/** A message's text, whether a string or parts. */
function textOf(content: WireMessage["content"]): string {
  if (typeof content === "string") return content;
  return (content ?? []).map((part) => part.text ?? "").join("\n");
}

/** The images the conversation carries, by size (what the model was really sent). */
function imagesIn(messages: readonly WireMessage[]): string[] {
  return messages.flatMap((m) => (Array.isArray(m.content) ? m.content : []).flatMap((part) => (part.type === "image_url" && part.image_url ? [sizeOf(part.image_url.url)] : [])));
}

function sizeOf(url: string): string {
  const bytes = Math.floor(((url.length - url.indexOf(",") - 1) * 3) / 4) - (url.endsWith("==") ? 2 : url.endsWith("=") ? 1 : 0);
  return bytes < 1024 ? `${bytes} bytes` : `${(bytes / 1024).toFixed(1)} KB`;
}

/** The invoice and amount a task names ("Pay INV-1042 ... EUR 1,250"), with defaults. */
export function invoiceIn(task: string): Payment {
  const invoice = /INV-\d+/i.exec(task)?.[0]?.toUpperCase() ?? "INV-1042";
  // The invoice number's digits are not an amount ("INV-7 EUR 30"), nor is a comma before the currency ("Hooli, EUR 42").
  const amount = /(?:EUR|€)\s*(\d[\d,]*(?:\.\d+)?)|(\d[\d,]*(?:\.\d+)?)\s*(?:EUR|€)/i.exec(task.replace(/INV-\d+/gi, ""));
  const amountEur = amount ? Number((amount[1] ?? amount[2])!.replace(/,/g, "")) : 1250;
  return { invoice, amountEur };
}

/** The scripted model: answers by what the conversation holds, so any number of runs can share it. */
export function webAssistantModel(pacing: { delayMs?: number } = {}): OfflineReplay {
  const respond: Respond = (request: ReceivedRequest) => {
    const messages = ((request.body as { messages?: WireMessage[] }).messages ?? []) as WireMessage[];
    const last = messages[messages.length - 1];
    const images = imagesIn(messages);
    if (last?.role === "tool") {
      const result = textOf(last.content);
      const filed = images.length > 0 ? ` The photo (${images.join(", ")}) is filed with it.` : "";
      const answer = /transfer of EUR/.test(result) ? `Done: ${result}.${filed}` : `I did not pay it: ${result}`;
      return textTurn(answer, undefined, pacing);
    }
    const task = textOf([...messages].reverse().find((m) => m.role === "user")?.content);
    const payment = invoiceIn(task);
    const seen = images.length > 0 ? `I see the photo you attached (${images.join(", ")}). ` : "";
    return toolCallTurn([{ id: `call_pay_${request.index + 1}`, name: "pay_invoice", args: { ...payment } }], undefined, {
      ...pacing,
      lead: `${seen}I found invoice ${payment.invoice} over EUR ${payment.amountEur}. I will pay it once you approve.`,
    });
  };
  return { source: "a scripted accounts-payable model", respond };
}
