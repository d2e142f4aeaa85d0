/**
 * A tiny agent run with the WebSocket inspector, executed as its own Node process by
 * inspector.test.ts (bundled first). It prints one JSON line and then must exit by itself:
 * no process.exit here, the test asserts the process ends on its own.
 *
 * argv: <inspector url> <"stop" | "auto"> [receiver url]
 * With a receiver url it also listens to the inspector server like the Stately UI would and
 * reports what arrived there.
 */
import { z } from "zod";
import { human } from "../../actors/messages.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { runAgent } from "../../machines/runner.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import { defineTool } from "../../tools/tool.js";
import { inspectAgent } from "../../visualize/inspector.js";

const [url = "ws://127.0.0.1:9", mode = "auto", receiverUrl] = process.argv.slice(2);

interface Received {
  type: string;
  sessionId?: string;
  rootId?: string;
  snapshot?: { status?: string; value?: unknown };
}

function listen(address: string): Promise<{ received: Received[]; raw: string[]; done: Promise<void>; close(): void }> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(address);
    const received: Received[] = [];
    const raw: string[] = [];
    let finish: () => void = () => undefined;
    const done = new Promise<void>((r) => (finish = r));
    socket.onmessage = (message) => {
      const text = String(message.data);
      raw.push(text);
      const event = JSON.parse(text) as Received;
      received.push(event);
      if (event.type === "@xstate.snapshot" && event.sessionId === event.rootId && event.snapshot?.status === "done") finish();
    };
    socket.onerror = () => reject(new Error(`receiver could not connect to ${address}`));
    socket.onopen = () => resolve({ received, raw, done, close: () => socket.close() });
  });
}

const receiver = receiverUrl ? await listen(receiverUrl) : undefined;
const add = defineTool({ name: "add", description: "Add two numbers.", parameters: z.object({ a: z.number(), b: z.number() }), execute: ({ a, b }) => a + b });
const machine = createReactMachine({
  modelClient: scriptedModel([{ toolCalls: [{ name: "add", arguments: { a: 20, b: 22 } }] }, { content: "The answer is 42, my secret friend." }]),
  tools: [add],
  config: { resilience: { fallbacks: [{ model: "backup", apiKey: "sk-child-Qw9Er8Ty7Ui6Op5As4Df" }] } },
});
// A short retry interval, so that reconnection attempts are pending while the run ends.
const inspector = inspectAgent({ mode: "websocket", url, retryMs: 100 });
const output = await runAgent(machine, { messages: [human("What is 20 + 22? Keep this prompt private.")] }, { inspect: inspector.inspect });
if (mode === "stop") inspector.stop();
if (receiver) {
  await receiver.done;
  receiver.close();
}
const report = receiver
  ? {
      events: receiver.received.length,
      values: receiver.received.flatMap((e) => (e.type === "@xstate.snapshot" && e.sessionId === e.rootId ? [JSON.stringify(e.snapshot?.value ?? null)] : [])),
      types: [...new Set(receiver.received.map((e) => e.type))],
      text: receiver.raw.join("\n"),
    }
  : undefined;
console.log(JSON.stringify({ status: output.status, enabled: inspector.enabled, report }));
