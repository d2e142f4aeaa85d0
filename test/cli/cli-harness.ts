import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { packageRoot } from "../../cli/package-root.js";

export const ROOT = packageRoot();
export const CLI = join(ROOT, "dist", "cli", "main.js");

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The environment of a fresh machine: no endpoint configured, whatever the developer has set. */
export function cleanEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !/^(OPENAI_|JIANMU_)/.test(key)) env[key] = value;
  }
  return { ...env, NO_COLOR: "1", ...extra };
}

/** Run the built CLI as a user would: a separate process, stdin not a terminal. */
export function runCli(args: string[], options: { env?: Record<string, string>; cwd?: string; input?: string } = {}): Promise<CliResult> {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run "npm run build" first (npm test does)`);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd: options.cwd ?? ROOT, env: options.env ?? cleanEnv(), stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(options.input ?? "");
  });
}

/**
 * Run the CLI under a pseudo-terminal (util-linux `script`), typing `answers` one line at a time
 * whenever the output shows a prompt. Returns everything the terminal showed.
 */
export function runCliInTerminal(args: string[], answers: string[], options: { env?: Record<string, string>; cwd?: string } = {}): Promise<CliResult> {
  const command = [process.execPath, CLI, ...args].map((part) => `'${part.replace(/'/g, "'\\''")}'`).join(" ");
  return new Promise((resolve, reject) => {
    // A terminal session's environment: the test runner's own variables confuse `script`'s input relay.
    const env = { PATH: process.env["PATH"] ?? "/usr/bin:/bin", HOME: process.env["HOME"] ?? "/root", TERM: "dumb", ...options.env };
    const child = spawn("script", ["-qfec", command, "/dev/null"], { cwd: options.cwd ?? ROOT, env, stdio: ["pipe", "pipe", "pipe"] });
    let screen = "";
    let answered = 0;
    let seenPrompts = 0;
    const onOutput = (chunk: Buffer) => {
      screen += chunk.toString();
      // The approver's three prompts: approve?, rejection reason, edited arguments.
      const prompts = screen.match(/(\[e\]dit arguments|\(optional\)|\(was [^\n]*\)): /g)?.length ?? 0;
      while (seenPrompts < prompts) {
        seenPrompts += 1;
        if (answered < answers.length) child.stdin.write(`${answers[answered++]}\r`);
      }
    };
    child.stdout.on("data", onOutput);
    child.stderr.on("data", onOutput);
    // A stuck run must fail with what the terminal showed, not as a bare test timeout.
    const stuck = setTimeout(() => child.kill("SIGKILL"), 20_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(stuck);
      resolve({ code, stdout: screen, stderr: "" });
    });
  });
}

/** A key to press once the terminal shows `when`: raw bytes, e.g. "\x03" (Ctrl-C), "\x04" (Ctrl-D), "y\r". */
export interface KeyPress {
  when: RegExp;
  send: string;
}

/**
 * Run a shell command line under a pseudo-terminal (util-linux `script`), pressing `keys` in order,
 * each once the screen matches its `when`. `command` may redirect (`> answer.txt`) like a user would.
 */
export function runInTerminal(command: string, keys: KeyPress[], options: { env?: Record<string, string>; cwd?: string } = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const env = { PATH: process.env["PATH"] ?? "/usr/bin:/bin", HOME: process.env["HOME"] ?? "/root", TERM: "dumb", ...options.env };
    const child = spawn("script", ["-qfec", command, "/dev/null"], { cwd: options.cwd ?? ROOT, env, stdio: ["pipe", "pipe", "pipe"] });
    let screen = "";
    let next = 0;
    let searchFrom = 0;
    const onOutput = (chunk: Buffer) => {
      screen += chunk.toString();
      while (next < keys.length) {
        const match = keys[next]!.when.exec(screen.slice(searchFrom));
        if (!match) break;
        searchFrom += match.index + match[0].length;
        child.stdin.write(keys[next++]!.send);
      }
    };
    child.stdout.on("data", onOutput);
    child.stderr.on("data", onOutput);
    const stuck = setTimeout(() => child.kill("SIGKILL"), 60_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(stuck);
      resolve({ code, stdout: screen, stderr: "" });
    });
  });
}

/** The command line to run the built CLI in a shell, arguments quoted. */
export function cliCommand(args: string[]): string {
  return [process.execPath, CLI, ...args].map((part) => `'${part.replace(/'/g, "'\\''")}'`).join(" ");
}
