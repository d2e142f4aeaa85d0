import { resolve } from "node:path";
import { createActor, type InspectionEvent, type Observer } from "xstate";
import type { Guard } from "../actors/guard.js";
import { requireApproval } from "../actors/guards/index.js";
import { human, type MediaPart } from "../actors/messages.js";
import { describePart } from "../actors/content-parts.js";
import { UNSUPPORTED_CONTENT } from "../actors/content-capabilities.js";
import type { ModelClient } from "../actors/model-client.js";
import { ModelClientOptionsError } from "../actors/openai/model-client-options.js";
import { resolveModelClient, type ModelClientOptions } from "../actors/openai/openai-model-client.js";
import { loadConfig, readConfigFile, type JianmuFile, type ReActConfigInput } from "../machines/contract/config.js";
import type { AgentOutput } from "../machines/contract/context.js";
import type { AgentEmitted } from "../machines/contract/events.js";
import { createReactMachine } from "../machines/react-machine.js";
import { startOpenAIServer, type OpenAIServer } from "../testing/openai-server.js";
import { replayRecording } from "../testing/recordings.js";
import { OptionalPeerMissingError } from "../tools/optional-peer.js";
import { BUILTIN_TOOL_NAMES, createListFilesTool, createReadFileTool, calculatorTool, currentTimeTool } from "../tools/builtin/index.js";
import type { Tool } from "../tools/tool.js";
import { combineInspectors } from "../visualize/combine-inspectors.js";
import { RunRecorder } from "../visualize/recorder.js";
import { attachApprover } from "./approvals.js";
import { UsageError, type RunArgs } from "./args.js";
import { DEFAULT_DEMO, demoTasks, recordedDemoFor, recordingPath, type RecordedDemo } from "./demos.js";
import { resolveEndpoint } from "./endpoint.js";
import { isListening } from "./inspector-probe.js";
import { PROMPT_CLOSED, SIGINT, type Interrupts } from "./interrupts.js";
import { checkBaseUrl, checkRoot, checkWritableFile } from "./preflight.js";
import { attachmentParts } from "./attachments.js";
import { JsonProgress, TextProgress, type Progress, type Terminal } from "./progress.js";

export interface RunContext extends Terminal {
  input: NodeJS.ReadableStream & { isTTY?: boolean };
  cwd: string;
  interrupts: Interrupts;
}

const DEFAULT_TOOLS = ["calculator", "current_time"];
const DEFAULT_MODEL = "gpt-4o-mini";
const DEFAULT_INSPECTOR_URL = "ws://localhost:8080";

function builtinTools(names: readonly string[], root: string): Tool[] {
  return names.map((name) => {
    switch (name) {
      case "calculator":
        return calculatorTool;
      case "current_time":
        return currentTimeTool;
      case "read_file":
        return createReadFileTool({ root });
      case "list_files":
        return createListFilesTool({ root });
      default:
        throw new UsageError(`--tools: unknown tool "${name}"; the built-in tools are ${BUILTIN_TOOL_NAMES.join(", ")}`);
    }
  });
}

/** --require-approval a,tag:b → one guard asking before those tools and tools with those effect tags. */
function approvalGuards(items: readonly string[]): Guard[] {
  if (items.length === 0) return [];
  const effectTags = items.filter((item) => item.startsWith("tag:")).map((item) => item.slice(4));
  const tools = items.filter((item) => !item.startsWith("tag:"));
  return [
    requireApproval({
      ...(tools.length > 0 ? { tools } : {}),
      ...(effectTags.length > 0 ? { effectTags } : {}),
      reason: "you asked to approve these calls (--require-approval)",
    }),
  ];
}

/** The API (--api wins over jianmu.yaml's llm.api), reasoning settings and store of jianmu.yaml. */
function modelApiOptions(args: RunArgs, file: JianmuFile | undefined): Pick<ModelClientOptions, "api" | "reasoning" | "store"> {
  const options: Pick<ModelClientOptions, "api" | "reasoning" | "store"> = {};
  const api = args.api ?? file?.api;
  if (api !== undefined) options.api = api;
  if (file?.reasoning !== undefined) options.reasoning = file.reasoning;
  if (file?.store !== undefined) options.store = file.store;
  return options;
}

/** Model client options the user got wrong (e.g. a bad OPENAI_BASE_URL) are usage errors too. */
function modelClientFor(options: ModelClientOptions): ModelClient {
  try {
    return resolveModelClient(options);
  } catch (error) {
    if (error instanceof ModelClientOptionsError) throw new UsageError(`the model endpoint: ${error.problems.join("; ")}`);
    throw error;
  }
}

/** The live Stately inspector, loaded only for --inspect (its package is an optional peer). */
async function startInspector(progress: Progress, secrets: (string | undefined)[], env: Record<string, string | undefined>) {
  const url = env["JIANMU_INSPECT_URL"] || DEFAULT_INSPECTOR_URL;
  // inspectAgent's own reason suggests its force option, which the CLI does not have: say what the CLI user can do.
  if (env["NODE_ENV"] === "production") {
    progress.note('--inspect: NODE_ENV is "production" and the inspector is a development tool; run without NODE_ENV=production to use it. The run goes on without it.');
    return undefined;
  }
  let inspectAgent: typeof import("../inspect.js").inspectAgent;
  try {
    ({ inspectAgent } = await import("../inspect.js"));
  } catch (error) {
    if (error instanceof OptionalPeerMissingError) throw new UsageError(`--inspect: ${error.message}`);
    throw error;
  }
  const inspector = inspectAgent({ mode: "websocket", url, secrets, retryMs: false });
  if (!inspector.enabled) progress.note(`--inspect: ${inspector.reason ?? "the inspector is disabled"}`);
  else if (await isListening(url)) progress.note(`--inspect: sending the run to the Stately inspector at ${url}`);
  else progress.note(`--inspect: no inspector is listening at ${url}; start one first (see docs/visualize.md). The run goes on without it.`);
  return inspector;
}

interface Plan {
  task: string;
  tools: Tool[];
  demo: RecordedDemo | undefined;
  /** `--image` and `--file`, read and checked. */
  attachments: MediaPart[];
}

/**
 * What to run, worked out before anything starts: every usage and file problem is found here,
 * before a server is started or a model is called.
 */
function plan(args: RunArgs, ctx: RunContext, offline: boolean): Plan {
  const root = args.root !== undefined ? checkRoot(ctx.cwd, args.root) : resolve(ctx.cwd);
  const builtins = builtinTools(args.tools ?? DEFAULT_TOOLS, root);
  if (args.record !== undefined) checkWritableFile("--record", ctx.cwd, args.record, "run.jsonl");
  const attachments = attachmentParts(args.images, args.files, ctx.cwd);
  if (offline && attachments.length > 0) {
    throw new UsageError(`${args.images.length > 0 ? "--image" : "--file"} needs a model endpoint: set OPENAI_BASE_URL or OPENAI_API_KEY (or start one with jianmu serve); the offline replay knows only the recorded text tasks`);
  }
  if (offline) {
    const demo = args.task === undefined ? DEFAULT_DEMO : recordedDemoFor(args.task);
    if (!demo) {
      throw new UsageError(
        `no model endpoint is configured (set OPENAI_BASE_URL or OPENAI_API_KEY, or start one with jianmu serve), and offline replay knows only the recorded tasks: ${demoTasks()
          .map((t) => `jianmu run "${t}"`)
          .join(" or ")}`,
      );
    }
    return { task: demo.task, tools: demo.tools(), demo, attachments };
  }
  // A recorded demo task brings the tools its recording calls, next to the built-ins.
  const demo = args.task === undefined ? DEFAULT_DEMO : recordedDemoFor(args.task);
  return { task: args.task ?? DEFAULT_DEMO.task, tools: [...(demo ? demo.tools() : []), ...builtins], demo, attachments };
}

/** `jianmu run`: resolves to the exit code (0 succeeded, 1 agent failed, 2 usage, 130/143 interrupted). */
export async function runCommand(args: RunArgs, ctx: RunContext): Promise<number> {
  const progress: Progress = args.json ? new JsonProgress(ctx) : new TextProgress(ctx);
  const file = readConfigFile({ cwd: ctx.cwd, env: ctx.env })?.file;
  const overrides: ReActConfigInput = {};
  if (args.maxIterations !== undefined) overrides.maxIterations = args.maxIterations;
  if (args.budget !== undefined) overrides.maxBudgetTokens = args.budget;
  const model = args.model ?? (ctx.env["JIANMU_MODEL"] || undefined);
  if (model !== undefined) overrides.model = model;
  const config = loadConfig(overrides, { cwd: ctx.cwd, env: ctx.env });
  const constraints = approvalGuards(args.requireApproval);
  const endpoint = resolveEndpoint(args, ctx.env, file);
  if (endpoint.kind === "configured" && endpoint.baseURL !== undefined) checkBaseUrl(endpoint.baseURLSource ?? "the base URL", endpoint.baseURL);
  const { task, tools, demo, attachments } = plan(args, ctx, endpoint.kind === "offline");
  const secrets = [endpoint.kind === "configured" ? endpoint.apiKey : undefined];

  let server: OpenAIServer | undefined;
  let modelClient: ModelClient;
  if (endpoint.kind === "offline") {
    const recorded = demo!;
    const ignored = [args.tools && "--tools", args.model && "--model", args.root && "--root"].filter(Boolean);
    server = await startOpenAIServer({ respond: replayRecording(recordingPath(recorded)) });
    modelClient = modelClientFor({ baseURL: server.baseURL, apiKey: "offline-replay", model: recorded.model, stream: true });
    progress.line(`offline demo: no model endpoint configured, so real recorded ${recorded.model} turns are replayed from ${server.baseURL} (${recorded.recording})`);
    // The replayed turns call the recording's tools with the recording's model: say what is ignored.
    if (ignored.length > 0) progress.note(`offline replay uses the recorded model and tools; ignoring ${ignored.join(", ")}`);
    config.model = recorded.model;
  } else {
    const apiOptions = modelApiOptions(args, file);
    modelClient = modelClientFor({
      ...(endpoint.baseURL !== undefined ? { baseURL: endpoint.baseURL } : {}),
      ...(endpoint.apiKey !== undefined ? { apiKey: endpoint.apiKey } : {}),
      model: config.model ?? DEFAULT_MODEL,
      stream: file?.stream ?? true,
      ...(args.accepts ? { accepts: Object.fromEntries(args.accepts.map((kind) => [kind, true])) } : {}),
      ...apiOptions,
    });
    progress.note(`model ${config.model ?? DEFAULT_MODEL} at ${endpoint.baseURL ?? "https://api.openai.com/v1"}${apiOptions.api === "responses" ? " (Responses API)" : ""}`);
  }

  try {
    const inspector = args.inspect ? await startInspector(progress, secrets, ctx.env) : undefined;
    const machine = createReactMachine({ modelClient, tools, constraints, config });
    // The recorder and the inspector must see the actor from its first event, so they come first.
    const recorder = args.record ? new RunRecorder({ path: resolve(ctx.cwd, args.record), machine, secrets }) : undefined;
    const observers: Observer<InspectionEvent>[] = [recorder?.inspect, inspector?.inspect].filter((o): o is Observer<InspectionEvent> => o !== undefined);
    const inspect = observers.length > 0 ? combineInspectors(...observers) : undefined;
    const first = attachments.length > 0 ? human([{ type: "text", text: task }, ...attachments]) : human(task);
    const actor = createActor(machine, { input: { messages: [first] }, ...(inspect ? { inspect } : {}) });
    recorder?.attach(actor);
    progress.note(`task: ${task}`);
    for (const part of attachments) progress.note(`with ${describePart(part)}`);
    actor.on("*", (event) => {
      if (!ctx.interrupts.reason?.quiet) progress.event(event as AgentEmitted);
    });
    let lastState = "";
    actor.subscribe((snapshot) => {
      const value = JSON.stringify(snapshot.value);
      if (value !== lastState && !ctx.interrupts.reason?.quiet) progress.state(snapshot.value);
      lastState = value;
    });
    // Replayed turns were recorded once: a rejected or edited call does not change what the model "says" next.
    if (demo && endpoint.kind === "offline") {
      const sub = actor.on("guard.approval.decided", (event) => {
        if (event.decision === "approved" && !event.edited) return;
        sub.unsubscribe();
        progress.note(`offline replay: the recorded answers do not change with your decision (${event.callId} ${event.decision}${event.edited ? " with edited arguments" : ""}); they were recorded with the call approved as asked`);
      });
    }
    const approver = attachApprover(actor, progress, {
      yes: args.yes,
      input: ctx.input,
      output: ctx.err,
      onExit: (how) => ctx.interrupts.trigger(how === "Ctrl-C" ? SIGINT : PROMPT_CLOSED),
    });
    // Any interruption cancels the run: the machine ends in Failed{cancelled}, and the summary,
    // the recording's end and the providers' shutdown all happen on the normal path below.
    const undo = ctx.interrupts.on((why) => actor.send({ type: "agent.cancel", reason: why.detail }));
    try {
      const output = await new Promise<AgentOutput>((resolveOutput, reject) => {
        actor.subscribe({ complete: () => resolveOutput(actor.getSnapshot().output as AgentOutput), error: reject });
        actor.start();
      });
      const interrupted = ctx.interrupts.reason;
      if (!interrupted?.quiet) progress.finish(output, { maxIterations: config.maxIterations, ...(config.maxBudgetTokens !== undefined ? { maxBudgetTokens: config.maxBudgetTokens } : {}) });
      // The refusal names the library's option; at the command line the same is a flag.
      if (output.termination?.error?.code === UNSUPPORTED_CONTENT && !interrupted?.quiet) progress.note("on the command line, say what the model takes with --accepts image,file,audio");
      if (interrupted) return interrupted.code;
      return output.status === "succeeded" ? 0 : 1;
    } finally {
      undo();
      progress.stopSpinner();
      approver.close();
      inspector?.stop();
      if (recorder) {
        const summary = await recorder.close();
        if (!ctx.interrupts.reason?.quiet) progress.note(`recorded ${summary.lines} lines to ${summary.path}; view it with: jianmu view ${args.record}`);
      }
    }
  } finally {
    // The replay server must go whatever failed, or the process would never exit.
    await server?.close();
  }
}
