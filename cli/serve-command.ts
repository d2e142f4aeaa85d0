import { z } from "zod";
import { replies, startOpenAIServer, type OpenAIServer, type Respond } from "../testing/openai-server.js";
import { recordedTurns, scriptedTurns, textTurn, toolCallTurn, type TurnReplay } from "../testing/turns.js";
import { asRequested } from "../testing/whole-completion.js";
import type { ServeArgs } from "./args.js";
import { demoTasks, recordedDemoFor, recordingPath } from "./demos.js";
import type { Terminal } from "./progress.js";

/** `GET /jianmu/tasks` (beside `/v1`): the tasks this server answers, as JSON. */
export const TASKS_PATH = "/jianmu/tasks";

/** The README's first question, answered by scripted turns: the calculator, then the answer. */
const CALCULATOR_TASK = "What is 25 * 4 + 10?";

/** docs/web.md's walkthrough: its client asks its server's payments agent this; pay_invoice (approved), then the answer. */
const WEB_DOCS_TASK = "Pay INV-1042, EUR 1,250";

function catalogue(): Map<string, TurnReplay> {
  const tasks = new Map<string, TurnReplay>();
  for (const task of demoTasks()) {
    const demo = recordedDemoFor(task)!;
    tasks.set(normalize(task), recordedTurns(recordingPath(demo), `real ${demo.model} turns (${demo.recording})`));
  }
  tasks.set(
    normalize(CALCULATOR_TASK),
    scriptedTurns([toolCallTurn([{ id: "call_calc_1", name: "calculator", args: { expression: "25 * 4 + 10" } }]), textTurn("25 * 4 + 10 = 110.")]),
  );
  tasks.set(
    normalize(WEB_DOCS_TASK),
    scriptedTurns([
      toolCallTurn([{ id: "call_pay_1", name: "pay_invoice", args: { invoice: "INV-1042", amountEur: 1250 } }]),
      textTurn("Paid: transfer of EUR 1250 for INV-1042 sent."),
    ]),
  );
  return tasks;
}

function normalize(task: string): string {
  return task.trim().replace(/\s+/g, " ").toLowerCase();
}

const ChatBody = z.object({
  messages: z.array(z.object({ role: z.string(), content: z.unknown() }).loose()),
});

/** The text of a message's content, whether a string or an array of parts. */
function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((part) => (typeof part === "object" && part !== null && "text" in part ? String(part.text) : "")).join("");
  return "";
}

/**
 * Answers by conversation, not by arrival: the task is the first user message, and the turn is the
 * number of assistant messages already in the request. So several apps (or a retry) can share one
 * server, and each conversation gets the next turn of its own script.
 */
export function serveResponder(): { respond: Respond; tasks: string[] } {
  const tasks = catalogue();
  const known = [...demoTasks(), CALCULATOR_TASK, WEB_DOCS_TASK];
  const respond: Respond = (request) => {
    // Which tasks it answers, for tools that want to know before they ask (examples/run.mjs skips the others).
    if (request.method === "GET" && request.path === TASKS_PATH) return replies.json({ server: "jianmu serve", tasks: known });
    const body = ChatBody.safeParse(request.body);
    if (!request.path.endsWith("/chat/completions") || !body.success) {
      return replies.error(404, "jianmu serve answers POST /v1/chat/completions with a messages array");
    }
    const task = body.data.messages.find((message) => message.role === "user");
    const replay = task ? tasks.get(normalize(textOf(task.content))) : undefined;
    if (!replay) {
      return replies.error(404, `jianmu serve replays only these tasks: ${known.map((t) => `"${t}"`).join(", ")}; ask one of them, or point OPENAI_BASE_URL at a real model`);
    }
    const turn = body.data.messages.filter((message) => message.role === "assistant").length;
    // The turns are streams; a client made with `stream: false` gets the whole completion, as from a real endpoint.
    return Promise.resolve(replay.respond({ ...request, index: turn })).then((reply) => asRequested(reply, request.body));
  };
  return { respond, tasks: known };
}

/** `jianmu serve`: runs until SIGINT/SIGTERM (`stopped` resolves), then closes the server. */
export async function serveCommand(args: ServeArgs, ctx: Terminal, stopped: Promise<unknown>): Promise<number> {
  const { respond, tasks } = serveResponder();
  let server: OpenAIServer;
  try {
    server = await startOpenAIServer({ respond, port: args.port, keepRequests: false });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "EADDRINUSE") {
      ctx.err.write(`jianmu: --port ${args.port} is in use: pick another port, or --port 0 for a free one\n`);
      return 2;
    }
    throw error;
  }
  ctx.err.write(`jianmu serve: an OpenAI-compatible replay server at ${server.baseURL}; it answers these tasks:\n${tasks.map((t) => `  ${t}\n`).join("")}`);
  ctx.err.write(`Point your app or the examples at it (no key needed), then Ctrl-C to stop:\n`);
  ctx.out.write(`export OPENAI_BASE_URL=${server.baseURL}\n`);
  await stopped;
  await server.close();
  ctx.err.write("jianmu serve: stopped\n");
  return 0;
}
