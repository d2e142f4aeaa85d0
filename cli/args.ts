import { parseArgs, type ParseArgsConfig } from "node:util";

/** A command line that cannot be run as typed. Exit code 2, with the fix in the message. */
export class UsageError extends Error {
  override name = "UsageError";
}

export const USAGE = `Usage:
  jianmu run ["<task>"] [options]   run a ReAct agent on a task (no task: the recorded demo task)
  jianmu view <recording.jsonl> [--out <file.html>]   write a self-contained HTML viewer of a recorded run
  jianmu help
  jianmu worker | runs | approve | reject | cancel ... --store <file.db | postgres://...>   the run queue (below)

Options for run:
  --model <name>            model to use (default: models.react in jianmu.yaml, $JIANMU_MODEL, gpt-4o-mini)
  --base-url <url>          OpenAI-compatible endpoint (default: $OPENAI_BASE_URL, llm.base_url in jianmu.yaml)
  --max-iterations <n>      loop iterations before giving up (default 10)
  --budget <tokens>         total token budget for the run
  --tools <a,b,...>         built-in tools to offer: calculator,current_time,read_file,list_files (default: calculator,current_time)
  --root <dir>              sandbox folder for read_file/list_files (default: the current folder)
  --require-approval <a,b>  ask before running these tools (or effect tags, e.g. tag:filesystem)
  --yes                     approve every call that needs approval without asking
  --record <file.jsonl>     record the run (inspection + telemetry events) for \`jianmu view\`
  --inspect                 send the run to the Stately inspector over WebSocket (dev only)
  --json                    print events and the output as JSON lines instead of text

With neither OPENAI_API_KEY nor OPENAI_BASE_URL (nor llm.base_url) set, run replays real recorded model
turns from a local loopback server: only the recorded demo tasks work then.

Run queue (--store <file.db | postgres://...>, --schema <name> for PostgreSQL):
  jianmu worker --store <s> --agents <module> [--concurrency n] [--lease-ms n] [--poll-ms n] [--json]
  jianmu run --store <s> --agent <name> "<task>" [--detach]
  jianmu runs --store <s> [--status s] [--agent a] [--limit n] [--json]   |   jianmu runs show <runId> --store <s>
  jianmu approve|reject <runId> [callId] --store <s> [--reason text]   |   jianmu cancel <runId> --store <s>
  jianmu view --store <s> <runId> [--out run.html]   the run viewer of a stored run

Exit codes: 0 the agent succeeded, 1 the agent failed (the reason is printed), 2 usage or configuration error.`;

export interface RunArgs {
  command: "run";
  task?: string;
  model?: string;
  baseURL?: string;
  maxIterations?: number;
  budget?: number;
  tools?: string[];
  root?: string;
  requireApproval: string[];
  yes: boolean;
  record?: string;
  inspect: boolean;
  json: boolean;
}

export interface ViewArgs {
  command: "view";
  recording: string;
  out?: string;
}

export type CliArgs = RunArgs | ViewArgs | { command: "help" };

function positiveInt(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || Number(value) < 1) throw new UsageError(`--${flag} must be a whole number of at least 1, got "${value}"`);
  return Number(value);
}

function list(value: string | undefined): string[] | undefined {
  return value === undefined ? undefined : value.split(",").map((item) => item.trim()).filter(Boolean);
}

function parse(argv: string[], options: NonNullable<ParseArgsConfig["options"]>) {
  try {
    return parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError(`${(error as Error).message.replace(/\. To specify a positional.*$/s, "")}\nRun "jianmu help" for the options.`);
  }
}

export function parseCli(argv: string[]): CliArgs {
  const [command, ...rest] = argv;
  if (command === undefined || command === "help" || command === "--help" || command === "-h") return { command: "help" };
  if (command === "view") {
    const { values, positionals } = parse(rest, { out: { type: "string" } });
    if (positionals.length !== 1) throw new UsageError('view takes exactly one recording file: jianmu view run.jsonl [--out run.html]');
    return { command: "view", recording: positionals[0]!, ...(values["out"] !== undefined ? { out: String(values["out"]) } : {}) };
  }
  if (command !== "run") throw new UsageError(`unknown command "${command}": use "jianmu run", "jianmu view" or "jianmu help"`);
  const { values, positionals } = parse(rest, {
    model: { type: "string" },
    "base-url": { type: "string" },
    "max-iterations": { type: "string" },
    budget: { type: "string" },
    tools: { type: "string" },
    root: { type: "string" },
    "require-approval": { type: "string" },
    yes: { type: "boolean" },
    record: { type: "string" },
    inspect: { type: "boolean" },
    json: { type: "boolean" },
  });
  if (positionals.length > 1) throw new UsageError(`run takes one task; quote it: jianmu run "${positionals.join(" ")}"`);
  const text = (name: string) => (values[name] === undefined ? undefined : String(values[name]));
  const baseURL = text("base-url");
  if (baseURL !== undefined && !URL.canParse(baseURL)) throw new UsageError(`--base-url must be a URL such as http://127.0.0.1:8000/v1, got "${baseURL}"`);
  const args: RunArgs = {
    command: "run",
    requireApproval: list(text("require-approval")) ?? [],
    yes: values["yes"] === true,
    inspect: values["inspect"] === true,
    json: values["json"] === true,
  };
  if (positionals[0] !== undefined) {
    if (positionals[0].trim() === "") throw new UsageError("the task is empty: jianmu run \"<what the agent should do>\"");
    args.task = positionals[0];
  }
  const model = text("model");
  if (model !== undefined) args.model = model;
  if (baseURL !== undefined) args.baseURL = baseURL;
  const maxIterations = positiveInt("max-iterations", text("max-iterations"));
  if (maxIterations !== undefined) args.maxIterations = maxIterations;
  const budget = positiveInt("budget", text("budget"));
  if (budget !== undefined) args.budget = budget;
  const tools = list(text("tools"));
  if (tools !== undefined) args.tools = tools;
  const root = text("root");
  if (root !== undefined) args.root = root;
  const record = text("record");
  if (record !== undefined) args.record = record;
  return args;
}
