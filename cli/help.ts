import { CONFIG_FILE, ReActConfig } from "../machines/contract/config.js";

/** Every command `jianmu` knows: `jianmu help <command>` and `jianmu <command> --help` show its text. */
export const COMMANDS = ["run", "eval", "view", "serve", "worker", "runs", "approve", "reject", "cancel", "help"] as const;
export type CommandName = (typeof COMMANDS)[number];

/** The run queue's commands (a `--store` on run or view makes those queue commands too). */
export const QUEUE_COMMANDS = ["worker", "runs", "approve", "reject", "cancel"] as const;

const EXIT_CODES = `Exit codes: 0 the agent succeeded, 1 the agent failed (the reason is printed), 2 usage or configuration error,
130 interrupted (Ctrl-C, or Ctrl-D at a prompt), 143 terminated (SIGTERM).`;

const STORE = `--store <s>               the run queue: a SQLite file (e.g. .jianmu/runs.db) or a PostgreSQL URL (postgres://user:pw@host:5432/db)
  --schema <name>           PostgreSQL only: the schema holding the queue's tables (default jianmu)`;

const RUN_OPTIONS = `Options:
  --image <file | url>      an image to go with the task (png, jpg, gif, webp, or an http(s) URL); repeatable
  --file <file>             a document or recording to go with the task (pdf, wav, mp3); repeatable
  --accepts <kinds>         what the model takes besides text, of image,file,audio (default: known
                            from the model's name, see docs/content-parts.md)
  --model <name>            model to use (default: ${CONFIG_FILE.pathOf("model")} in jianmu.yaml, $JIANMU_MODEL, gpt-4o-mini)
  --base-url <url>          OpenAI-compatible endpoint, http(s)://... (default: $OPENAI_BASE_URL, ${CONFIG_FILE.pathOf("baseURL")} in jianmu.yaml)
  --api <chat|responses>    the API to speak: Chat Completions (default) or the Responses API (default: ${CONFIG_FILE.pathOf("api")} in jianmu.yaml)
  --max-iterations <n>      loop iterations before giving up (default ${ReActConfig.shape.maxIterations.parse(undefined)})
  --budget <tokens>         total token budget for the run
  --tools <a,b,...>         built-in tools to offer: calculator,current_time,read_file,list_files (default: calculator,current_time)
  --root <dir>              sandbox folder for read_file/list_files (default: the current folder)
  --require-approval <a,b>  ask before running these tools (or effect tags, e.g. tag:filesystem)
  --yes                     approve every call that needs approval without asking
  --record <file.jsonl>     record the run (inspection + telemetry events) for \`jianmu view\`
  --inspect                 send the run to the Stately inspector over WebSocket (dev only; needs @statelyai/inspect;
                            the server: $JIANMU_INSPECT_URL, default ws://localhost:8080)
  --json                    print events and the output as JSON lines on stdout instead of text`;

export const HELP: Record<CommandName, string> = {
  run: `Usage: jianmu run ["<task>"] [options]
       jianmu run --store <s> --agent <name> "<task>" [--image f] [--file f] [--detach]
Run a ReAct agent on a task (no task: the recorded demo task). Only the answer goes to stdout;
progress, tool calls and prompts go to stderr.

${RUN_OPTIONS}

With neither OPENAI_API_KEY nor OPENAI_BASE_URL (nor ${CONFIG_FILE.pathOf("baseURL")}) set, run replays real recorded model
turns from a local loopback server: only the recorded demo tasks work then (see also: jianmu serve).
Colour is used only on a terminal, and never when NO_COLOR is set.

On the run queue (a worker runs it, see jianmu help worker):
  ${STORE}
  --agent <name>            the agent to run, as the workers know it (their --agents module names it)
  --detach                  print the run's id and exit; otherwise wait for its answer, and say (or, on a
                            terminal, ask) when it waits for approval

${EXIT_CODES}`,
  eval: `Usage: jianmu eval <module> [--concurrency <n>] [--json]
       jianmu eval --from-recording <run.jsonl>
Run an agent on a set of cases and check each one's answer and trajectory (its tool calls and the
states of its chart it went through; see docs/testing.md, "Evals"). The module (JavaScript, or
TypeScript with a loader: node --import tsx ...) exports \`agent\`, a machine from createReactMachine, and
\`cases\`, an array of { name, input, expect }. Prints a line per case (✓ or ✗) with each failed
expectation under it, and the totals.

Options:
  --concurrency <n>         cases run at once (default 1)
  --json                    print the report as JSON on stdout (each case's name, pass, failures, status,
                            answer, rounds, usage and trajectory)
  --from-recording <file>   print the case a recorded run makes (jianmu run --record run.jsonl): its input,
                            and what it did as expectations (status, tool calls in order, the states it
                            went through, its rounds at most), to add to cases and edit

Exit codes: 0 every case passed, 1 a case failed, 2 usage error (a module or a case that cannot be used).`,
  view: `Usage: jianmu view <recording.jsonl> [--out <file.html>]
       jianmu view --store <s> <runId> [--checkpoint <id>] [--out <file.html>]
Write a self-contained HTML viewer of a recorded run (record one with: jianmu run --record run.jsonl),
or of a run in the run queue at a checkpoint (default: its last; checkpoints keep no timings or per-call counts).`,
  serve: `Usage: jianmu serve [--port <n>]
Start the offline replay server: an OpenAI-compatible endpoint on 127.0.0.1 that answers with real
recorded model turns (the demo tasks) and scripted turns (the README's calculator question, the task
of docs/web.md's walkthrough), so your own app tries the real-endpoint path with no key. Other tasks
get a 404 naming the ones it knows (GET /jianmu/tasks lists them). It prints the line to export:
  export OPENAI_BASE_URL=http://127.0.0.1:<port>/v1
Stop it with Ctrl-C. --port 0 (the default) picks a free port.`,
  worker: `Usage: jianmu worker --store <s> --agents <module> [--concurrency n] [--lease-ms n] [--poll-ms n] [--json]
Claim and run queued runs of the agents a module exports, until SIGINT/SIGTERM (in-flight runs reach a
checkpoint and are released). The module exports agents({ store }) returning { name: createReactMachine(...) },
or named machines. A TypeScript module needs a loader: node --import tsx node_modules/jianmu/dist/cli/main.js worker ...

  ${STORE}
  --agents <module>         the agents module (a .js/.mjs file, or .ts with a loader)
  --concurrency <n>         runs held at once (default 4)
  --lease-ms <n>            how long a claim lasts without renewal (default 30000)
  --poll-ms <n>             how often to look for work when no notification comes (default 1000)
  --json                    one JSON line per worker event on stdout`,
  runs: `Usage: jianmu runs --store <s> [--status s] [--agent a] [--limit n] [--json]
       jianmu runs show <runId> --store <s>
List the runs in the queue, newest first (with their pending approvals), or show one run: status,
pending approvals, answer. Reads only: a store or schema that does not exist is an error, not created.

  ${STORE}
  --status <s>              queued | running | awaitingApproval | succeeded | failed
  --agent <name>            only this agent's runs
  --limit <n>               at most n runs
  --json                    one JSON line per run`,
  approve: `Usage: jianmu approve <runId> [callId] --store <s>
Approve a call the run waits on (every waiting call, without callId). A worker picks the run up and
carries on. See the waiting calls with: jianmu runs show <runId> --store <s>

  ${STORE}`,
  reject: `Usage: jianmu reject <runId> [callId] --store <s> [--reason "<text>"]
Reject a call the run waits on (every waiting call, without callId); the model reads the reason.

  ${STORE}
  --reason <text>           why (the model reads it)`,
  cancel: `Usage: jianmu cancel <runId> --store <s> [--reason "<text>"]
Cancel a run: it ends failed (cancelled) at its next step, whether queued, running or waiting.

  ${STORE}
  --reason <text>           said in the run's termination`,
  help: `Usage: jianmu help [command]
Show the commands, or one command's options: jianmu help run (same as jianmu run --help).`,
};

export const USAGE = `Usage:
  jianmu run ["<task>"] [options]   run a ReAct agent on a task (no task: the recorded demo task)
  jianmu eval <module> [--concurrency <n>] [--json]   run an agent on a module's cases and check answers and trajectories
  jianmu view <recording.jsonl> [--out <file.html>]   write a self-contained HTML viewer of a recorded run
  jianmu serve [--port <n>]         start the offline replay server and print the OPENAI_BASE_URL to export
  jianmu help [command]             this text, or one command's options (also: jianmu <command> --help)
  jianmu --version

Options for run:
${RUN_OPTIONS.split("\n").slice(1).join("\n")}

Run queue (--store <file.db | postgres://...>, --schema <name> for PostgreSQL):
  jianmu worker --store <s> --agents <module> [--concurrency n] [--lease-ms n] [--poll-ms n] [--json]
  jianmu run --store <s> --agent <name> "<task>" [--image f] [--file f] [--detach]
  jianmu runs --store <s> [--status s] [--agent a] [--limit n] [--json]   |   jianmu runs show <runId> --store <s>
  jianmu approve|reject <runId> [callId] --store <s> [--reason text]   |   jianmu cancel <runId> --store <s>
  jianmu view --store <s> <runId> [--checkpoint id] [--out run.html]   the run viewer of a stored run at a checkpoint (default: its last), with its history and branches

${EXIT_CODES}`;
