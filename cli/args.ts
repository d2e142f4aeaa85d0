import { parseArgs, type ParseArgsConfig } from "node:util";
import { ReActConfig } from "../machines/contract/config.js";
import { COMMANDS, type CommandName } from "./help.js";
import { JianmuError } from "../tools/jianmu-error.js";
import type { ModelApi } from "../actors/model-api.js";

/** A command line that cannot be run as typed: one line naming the flag and the fix, exit code 2. */
export class UsageError extends JianmuError {
  static override readonly errorCode = "USAGE_ERROR";
  override name = "UsageError";
}

export { COMMANDS, HELP, USAGE, type CommandName } from "./help.js";

export interface RunArgs {
  command: "run";
  task?: string;
  model?: string;
  baseURL?: string;
  /** --api: which of the SDK's APIs to speak (jianmu.yaml's llm.api otherwise). */
  api?: ModelApi;
  maxIterations?: number;
  budget?: number;
  tools?: string[];
  root?: string;
  requireApproval: string[];
  /** `--image`: paths or http(s) URLs, in order. */
  images: string[];
  /** `--file`: paths of documents and audio, in order. */
  files: string[];
  /** `--accepts`: the kinds the model takes besides text. */
  accepts?: ("image" | "file" | "audio")[];
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

export interface ServeArgs {
  command: "serve";
  port: number;
}

export type EvalArgs =
  | {
      command: "eval";
      /** The module exporting `agent` and `cases`. */
      module: string;
      concurrency: number;
      json: boolean;
    }
  | {
      command: "eval";
      /** `--from-recording`: print the case a recorded run makes, to run again as a regression test. */
      fromRecording: string;
    };

export type CliArgs = RunArgs | EvalArgs | ViewArgs | ServeArgs | { command: "help"; topic?: CommandName } | { command: "version" };

function wholeNumber(flag: string, value: string | undefined, min: number): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || Number(value) < min) throw new UsageError(`--${flag} must be a whole number of at least ${min}, got "${value}" (e.g. --${flag} ${min === 0 ? 8000 : 10})`);
  return Number(value);
}

/** A flag that sets a config field obeys that field's schema: its limits are the config's, named by the flag. */
function configFlag(flag: string, field: "maxIterations" | "maxBudgetTokens", value: number | undefined): number | undefined {
  if (value === undefined) return undefined;
  const checked = ReActConfig.shape[field].safeParse(value);
  if (!checked.success) throw new UsageError(`--${flag} ${value} is invalid: ${checked.error.issues[0]!.message}`);
  return value;
}

function list(value: string | undefined): string[] | undefined {
  return value === undefined ? undefined : value.split(",").map((item) => item.trim()).filter(Boolean);
}

type Options = NonNullable<ParseArgsConfig["options"]>;

/**
 * `--max-iterations -1` reads as two flags to node's parser, which then complains in its own words;
 * joined as `--max-iterations=-1` the value reaches our check, which names the flag and the fix.
 */
function joinDashValues(argv: readonly string[], options: Options): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const next = argv[i + 1];
    const name = arg.startsWith("--") ? arg.slice(2) : undefined;
    if (name !== undefined && options[name]?.type === "string" && next !== undefined && /^-\d/.test(next)) {
      out.push(`${arg}=${next}`);
      i++;
    } else out.push(arg);
  }
  return out;
}

/** Parse one command's flags (plus --help/-h); a mistake is a UsageError naming the flag and the fix. */
export function parse(command: CommandName, argv: string[], options: Options): { values: Record<string, string | boolean | string[] | undefined>; positionals: string[] } {
  try {
    return parseArgs({ args: joinDashValues(argv, options), options: { ...options, help: { type: "boolean", short: "h" } }, allowPositionals: true, strict: true });
  } catch (error) {
    const { code, message } = error as { code?: string; message: string };
    const flag = /'(-{1,2}[^' ]+)/.exec(message)?.[1] ?? "";
    if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") throw new UsageError(`unknown option ${flag} for "jianmu ${command}": see jianmu ${command} --help`);
    if (code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE") {
      const takesValue = options[flag.replace(/^-+/, "")]?.type === "string";
      throw new UsageError(takesValue ? `${flag} needs a value: ${flag} <value> (see jianmu ${command} --help)` : `${flag} takes no value: write ${flag} alone (see jianmu ${command} --help)`);
    }
    throw new UsageError(`${message.split("\n")[0]!.replace(/\. To specify a positional.*$/, "")}: see jianmu ${command} --help`);
  }
}

function isCommand(name: string | undefined): name is CommandName {
  return (COMMANDS as readonly string[]).includes(name ?? "");
}

export function parseCli(argv: string[]): CliArgs {
  const [command, ...rest] = argv;
  if (command === "--version" || command === "-V" || command === "version") return { command: "version" };
  if (command === undefined || command === "help" || command === "--help" || command === "-h") {
    const topic = command === "help" ? rest[0] : undefined;
    if (topic !== undefined && !isCommand(topic)) throw new UsageError(`no help for "${topic}": the commands are ${COMMANDS.join(", ")}`);
    return { command: "help", ...(topic !== undefined ? { topic } : {}) };
  }
  if (!isCommand(command)) throw new UsageError(`unknown command "${command}": the commands are ${COMMANDS.join(", ")} (jianmu help lists them)`);
  if (command === "view") {
    const { values, positionals } = parse("view", rest, { out: { type: "string" } });
    if (values["help"]) return { command: "help", topic: "view" };
    if (positionals.length !== 1) throw new UsageError("view takes exactly one recording file: jianmu view run.jsonl [--out run.html]");
    return { command: "view", recording: positionals[0]!, ...(values["out"] !== undefined ? { out: String(values["out"]) } : {}) };
  }
  if (command === "eval") {
    const { values, positionals } = parse("eval", rest, { concurrency: { type: "string" }, json: { type: "boolean" }, "from-recording": { type: "string" } });
    if (values["help"]) return { command: "help", topic: "eval" };
    if (values["from-recording"] !== undefined) {
      if (positionals.length > 0) throw new UsageError(`--from-recording takes no module: jianmu eval --from-recording run.jsonl (got ${positionals.join(" ")})`);
      return { command: "eval", fromRecording: String(values["from-recording"]) };
    }
    if (positionals.length !== 1) throw new UsageError(`eval takes one module (exporting agent and cases), got ${positionals.length}: jianmu eval evals.mjs`);
    const concurrency = wholeNumber("concurrency", values["concurrency"] as string | undefined, 1) ?? 1;
    return { command: "eval", module: positionals[0]!, concurrency, json: values["json"] === true };
  }
  if (command === "serve") {
    const { values, positionals } = parse("serve", rest, { port: { type: "string" } });
    if (values["help"]) return { command: "help", topic: "serve" };
    if (positionals.length > 0) throw new UsageError(`serve takes no arguments, got "${positionals.join(" ")}": jianmu serve [--port 8000]`);
    const port = wholeNumber("port", values["port"] === undefined ? undefined : String(values["port"]), 0) ?? 0;
    if (port > 65_535) throw new UsageError(`--port must be at most 65535, got "${port}" (or 0 for a free port)`);
    return { command: "serve", port };
  }
  if (command === "help") return { command: "help" };
  const { values, positionals } = parse("run", rest, {
    model: { type: "string" },
    "base-url": { type: "string" },
    api: { type: "string" },
    "max-iterations": { type: "string" },
    budget: { type: "string" },
    tools: { type: "string" },
    root: { type: "string" },
    "require-approval": { type: "string" },
    image: { type: "string", multiple: true },
    file: { type: "string", multiple: true },
    accepts: { type: "string" },
    yes: { type: "boolean" },
    record: { type: "string" },
    inspect: { type: "boolean" },
    json: { type: "boolean" },
  });
  if (values["help"]) return { command: "help", topic: "run" };
  if (positionals.length > 1) throw new UsageError(`run takes one task; quote it: jianmu run "${positionals.join(" ")}"`);
  const text = (name: string) => (values[name] === undefined ? undefined : String(values[name]));
  const baseURL = text("base-url");
  if (baseURL !== undefined && !isHttpUrl(baseURL)) throw new UsageError(`--base-url must be an http(s) URL such as http://127.0.0.1:8000/v1, got "${baseURL}"`);
  const args: RunArgs = {
    command: "run",
    requireApproval: list(text("require-approval")) ?? [],
    images: many(values["image"]),
    files: many(values["file"]),
    yes: values["yes"] === true,
    inspect: values["inspect"] === true,
    json: values["json"] === true,
  };
  if (positionals[0] !== undefined) {
    if (positionals[0].trim() === "") throw new UsageError('the task is empty: jianmu run "<what the agent should do>"');
    args.task = positionals[0];
  }
  const model = text("model");
  if (model !== undefined) args.model = model;
  const api = text("api");
  if (api !== undefined) {
    if (api !== "chat" && api !== "responses") throw new UsageError(`--api must be "chat" (Chat Completions) or "responses" (the Responses API), got "${api}"`);
    args.api = api;
  }
  if (baseURL !== undefined) args.baseURL = baseURL;
  const maxIterations = configFlag("max-iterations", "maxIterations", wholeNumber("max-iterations", text("max-iterations"), 1));
  if (maxIterations !== undefined) args.maxIterations = maxIterations;
  const budget = configFlag("budget", "maxBudgetTokens", wholeNumber("budget", text("budget"), 1));
  if (budget !== undefined) args.budget = budget;
  const tools = list(text("tools"));
  if (tools !== undefined) args.tools = tools;
  const root = text("root");
  if (root !== undefined) args.root = root;
  const record = text("record");
  if (record !== undefined) args.record = record;
  const accepts = list(text("accepts"));
  if (accepts !== undefined) {
    const unknown = accepts.filter((kind) => !["image", "file", "audio"].includes(kind));
    if (unknown.length > 0) throw new UsageError(`--accepts: unknown kind "${unknown[0]}"; give a list of image, file and audio, e.g. --accepts image,file`);
    args.accepts = accepts as NonNullable<RunArgs["accepts"]>;
  }
  return args;
}

/** A repeatable flag's values (none, one or several). */
function many(value: string | boolean | string[] | undefined): string[] {
  return Array.isArray(value) ? value : typeof value === "string" ? [value] : [];
}

/** An http:// or https:// URL: `localhost:8000/v1` parses as a URL with the scheme "localhost:". */
export function isHttpUrl(value: string): boolean {
  if (!URL.canParse(value)) return false;
  const { protocol } = new URL(value);
  return protocol === "http:" || protocol === "https:";
}
