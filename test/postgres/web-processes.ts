import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { startOpenAIServer, textTurn, toolCallTurn, type OpenAIServer, type ReceivedRequest } from "../../testing.js";
import { dist } from "./worker-processes.js";

const child = fileURLToPath(new URL("./web-child.mjs", import.meta.url));

export interface WebProcessOptions {
  role: "replica" | "worker";
  url: string;
  schema: string;
  baseURL: string;
  id: string;
  leaseMs?: number;
}

/** A real replica or worker process (web-child.mjs): `ready` once it serves (a replica's `base` URL) or claims. */
export class WebProcess {
  readonly process: ChildProcess;
  readonly ready: Promise<void>;
  readonly exited: Promise<number | null>;
  base = "";
  private stderr = "";

  constructor(readonly options: WebProcessOptions) {
    this.process = spawn(process.execPath, [child, JSON.stringify({ dist, ...options })], { stdio: ["ignore", "pipe", "pipe"] });
    this.process.stderr!.setEncoding("utf8").on("data", (chunk: string) => (this.stderr += chunk));
    this.exited = new Promise((resolve) => this.process.once("exit", (code) => resolve(code)));
    this.ready = new Promise((resolve, reject) => {
      let buffer = "";
      this.process.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
        buffer += chunk;
        const line = buffer.split("\n")[0]!;
        if (!buffer.includes("\n")) return;
        const { port } = JSON.parse(line) as { port?: number };
        if (port !== undefined) this.base = `http://127.0.0.1:${port}/api`;
        resolve();
      });
      void this.exited.then((code) => reject(new Error(`${options.role} ${options.id} exited (${code}) before it was ready: ${this.stderr.slice(-2000)}`)));
    });
  }

  /** kill -9 and wait until it is gone. */
  async kill(): Promise<void> {
    if (this.process.exitCode === null && this.process.signalCode === null) this.process.kill("SIGKILL");
    await this.exited;
  }

  get errors(): string {
    return this.stderr;
  }
}

/**
 * The model of the web-replica tests, a pure function of the conversation (any worker continuing a run
 * gets the same next turn): it says what it will do word by word (`lead` words, `pauseMs` apart), asks to
 * pay the note its task names ("pay <note> sleep <ms>"), and once the tool answered, says it is done.
 */
export function startPayerModel(lead: { words: number; pauseMs: number }): Promise<OpenAIServer> {
  return startOpenAIServer({
    respond: (request: ReceivedRequest) => {
      const messages = (request.body as { messages: { role: string; content?: unknown }[] }).messages;
      const task = String(messages.find((m) => m.role === "user")?.content ?? "");
      const [, note = "none", sleepMs = "0"] = /pay (\S+) sleep (\d+)/.exec(task) ?? [];
      if (messages.some((m) => m.role === "tool")) return textTurn("Paid, and that is all.", undefined, { delayMs: 5 });
      const words = Array.from({ length: lead.words }, (_, i) => `word${i}`).join(" ");
      return toolCallTurn([{ id: `call_${note}`, name: "pay", args: { note, sleepMs: Number(sleepMs) } }], undefined, { lead: words, delayMs: lead.pauseMs });
    },
  });
}
