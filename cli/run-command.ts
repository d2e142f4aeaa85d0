import { resolve } from "node:path";
import { createActor } from "xstate";
import type { Guard } from "../actors/guard.js";
import { requireApproval } from "../actors/guards/index.js";
import { human } from "../actors/messages.js";
import { resolveModelClient } from "../actors/openai/openai-model-client.js";
import { loadConfig, readConfigFile, type ReActConfigInput } from "../machines/config.js";
import type { AgentOutput } from "../machines/context.js";
import type { AgentEmitted } from "../machines/events.js";
import { createReactMachine } from "../machines/react-machine.js";
import { startOpenAIServer, type OpenAIServer } from "../testing/openai-server.js";
import { replayRecording } from "../testing/recordings.js";
import { BUILTIN_TOOL_NAMES, createListFilesTool, createReadFileTool, calculatorTool, currentTimeTool } from "../tools/builtin/index.js";
import type { Tool } from "../tools/tool.js";
import { combineInspectors, inspectAgent } from "../visualize/inspector.js";
import { RunRecorder } from "../visualize/recorder.js";
import { attachApprover } from "./approvals.js";
import { UsageError, type RunArgs } from "./args.js";
import { DEFAULT_DEMO, demoTasks, recordedDemoFor, recordingPath } from "./demos.js";
import { resolveEndpoint } from "./endpoint.js";
import { JsonProgress, TextProgress, type Progress, type Terminal } from "./progress.js";

export interface RunContext extends Terminal {
  input: NodeJS.ReadableStream & { isTTY?: boolean };
  env: Record<string, string | undefined>;
  cwd: string;
}

const DEFAULT_TOOLS = ["calculator", "current_time"];

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

/** `jianmu run`: resolves to the process exit code (0 succeeded, 1 agent failed, 2 usage). */
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
  let server: OpenAIServer | undefined;
  let tools: Tool[];
  let task = args.task;
  let modelClient;
  try {
    if (endpoint.kind === "offline") {
      const demo = task === undefined ? DEFAULT_DEMO : recordedDemoFor(task);
      if (!demo) {
        throw new UsageError(
          `no model endpoint is configured (set OPENAI_API_KEY or OPENAI_BASE_URL, or llm.base_url in jianmu.yaml), and offline replay only knows the recorded tasks:\n${demoTasks()
            .map((t) => `  jianmu run "${t}"`)
            .join("\n")}`,
        );
      }
      task = demo.task;
      server = await startOpenAIServer({ respond: replayRecording(recordingPath(demo)) });
      progress.line(`offline demo: no model endpoint configured, so real recorded ${demo.model} turns are replayed from ${server.baseURL} (${demo.recording})`);
      tools = demo.tools();
      // The replayed turns call the recording's tools with the recording's model: say what is ignored.
      const ignored = [args.tools && "--tools", args.model && "--model", args.root && "--root"].filter(Boolean);
      if (ignored.length > 0) progress.note(`offline replay uses the recorded model and tools; ignoring ${ignored.join(", ")}`);
      modelClient = resolveModelClient({ baseURL: server.baseURL, apiKey: "offline-replay", model: demo.model, stream: true });
      config.model = demo.model;
    } else {
      const demo = task === undefined ? DEFAULT_DEMO : undefined;
      task ??= DEFAULT_DEMO.task;
      tools = [...(demo ? demo.tools() : []), ...builtinTools(args.tools ?? DEFAULT_TOOLS, resolve(ctx.cwd, args.root ?? "."))];
      modelClient = resolveModelClient({
        ...(endpoint.baseURL !== undefined ? { baseURL: endpoint.baseURL } : {}),
        ...(endpoint.apiKey !== undefined ? { apiKey: endpoint.apiKey } : {}),
        model: config.model ?? "gpt-4o-mini",
        stream: file?.llm?.stream ?? true,
      });
      progress.note(`model ${config.model ?? "gpt-4o-mini"} at ${endpoint.baseURL ?? "https://api.openai.com/v1"}`);
    }

    const machine = createReactMachine({ modelClient, tools, constraints, config });
    // The recorder and the inspector must see the actor from its first event, so they come first.
    const secrets = [endpoint.kind === "configured" ? endpoint.apiKey : undefined];
    const recorder = args.record ? new RunRecorder({ path: resolve(ctx.cwd, args.record), machine, secrets }) : undefined;
    const inspector = args.inspect ? inspectAgent({ mode: "websocket", secrets }) : undefined;
    if (inspector && !inspector.enabled) progress.note(`--inspect: ${inspector.reason ?? "the inspector is disabled"}`);
    else if (inspector) progress.note("--inspect: sending the run to the Stately inspector at ws://localhost:8080 (see docs/visualize.md)");
    const inspect = recorder || inspector ? combineInspectors(recorder?.inspect, inspector?.inspect) : undefined;
    const actor = createActor(machine, { input: { messages: [human(task)] }, ...(inspect ? { inspect } : {}) });
    recorder?.attach(actor);
    progress.note(`task: ${task}`);
    actor.on("*", (event) => progress.event(event as AgentEmitted));
    let lastState = "";
    actor.subscribe((snapshot) => {
      const value = JSON.stringify(snapshot.value);
      if (value !== lastState) progress.state(snapshot.value);
      lastState = value;
    });
    const approver = attachApprover(actor, progress, { yes: args.yes, input: ctx.input, output: ctx.err });
    const onSigint = () => actor.send({ type: "agent.cancel", reason: "interrupted (Ctrl-C)" });
    process.once("SIGINT", onSigint);
    try {
      const output = await new Promise<AgentOutput>((resolveOutput, reject) => {
        actor.subscribe({ complete: () => resolveOutput(actor.getSnapshot().output as AgentOutput), error: reject });
        actor.start();
      });
      progress.finish(output);
      return output.status === "succeeded" ? 0 : 1;
    } finally {
      process.removeListener("SIGINT", onSigint);
      progress.stopSpinner();
      approver.close();
      inspector?.stop();
      if (recorder) {
        const summary = await recorder.close();
        progress.note(`recorded ${summary.lines} lines to ${summary.path}; view it with: jianmu view ${args.record}`);
      }
    }

  } finally {
    // The replay server must go whatever failed, or the process would never exit.
    await server?.close();
  }
}
