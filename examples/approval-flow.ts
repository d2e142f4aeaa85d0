/**
 * Human approval for destructive tools. The `requireApproval` guard parks every call of a tool
 * tagged "destructive" in AwaitingApproval; we listen for `guard.approval.requested` on the actor
 * and answer with `guard.approve` (here with edited arguments: move to trash instead of deleting)
 * or `guard.reject` (the model reads the reason). Every event is printed as it happens.
 *
 * Offline by default (scripted turns over a loopback OpenAI-compatible server); with
 * OPENAI_API_KEY or OPENAI_BASE_URL set, the same code asks the real model.
 * Run: node examples/run.mjs approval-flow   (test: npx vitest run examples/approval-flow.test.ts)
 */
import { createActor, toPromise } from "xstate";
import { z } from "zod";
import { createReactMachine, defineTool, human, requireApproval, type AgentEmitted, type AgentOutput } from "../index.js";
import { connectModel, type EndpointOptions } from "./support/endpoint.js";
import { failIfFailed } from "./support/outcome.js";
import { scriptedTurns, textTurn, toolCallTurn } from "./support/turns.js";

export const TASK = "Clean up the workspace: delete drafts/old-notes.txt and contracts/signed-2026.pdf.";

export const OFFLINE_TURNS = scriptedTurns([
  toolCallTurn([
    { id: "call_del_1", name: "delete_file", args: { path: "drafts/old-notes.txt" } },
    { id: "call_del_2", name: "delete_file", args: { path: "contracts/signed-2026.pdf" } },
  ]),
  textTurn(
    "drafts/old-notes.txt is now in the trash, so it can still be recovered. I did not delete contracts/signed-2026.pdf: the approver rejected it because contracts are kept for ten years.",
  ),
]);

/** A tiny in-memory file store, so the example deletes nothing real. */
function createWorkspace() {
  const files = new Map([
    ["drafts/old-notes.txt", "notes from March"],
    ["drafts/outline.md", "# Outline"],
    ["contracts/signed-2026.pdf", "%PDF-1.7 ..."],
  ]);
  const trash = new Map<string, string>();
  const deleteFile = defineTool({
    name: "delete_file",
    description: "Delete a file from the workspace, or move it to the trash with moveToTrash: true.",
    parameters: z.object({
      path: z.string().min(1).describe("Path of the file, e.g. drafts/old-notes.txt"),
      moveToTrash: z.boolean().default(false).describe("Keep a recoverable copy in the trash"),
    }),
    // The guard below reads this tag: no call of this tool runs without a human's yes.
    effectTags: ["destructive"],
    execute: ({ path, moveToTrash }) => {
      const content = files.get(path);
      if (content === undefined) throw new Error(`no file "${path}"; the files are: ${[...files.keys()].join(", ")}`);
      files.delete(path);
      if (moveToTrash) trash.set(path, content);
      return moveToTrash ? `moved ${path} to the trash` : `deleted ${path}`;
    },
  });
  return { files, trash, deleteFile };
}

/** The approver's policy (in an app: a person clicking a button). */
function review(path: string): { approve: true; args: Record<string, unknown> } | { approve: false; reason: string } {
  if (path.startsWith("drafts/")) return { approve: true, args: { path, moveToTrash: true } };
  return { approve: false, reason: "contracts are kept for ten years: do not delete them" };
}

function describeEvent(event: AgentEmitted): string | undefined {
  switch (event.type) {
    case "guard.approval.requested":
      return `approval requested: ${event.name} ${event.arguments} (${event.reason ?? "no reason given"})`;
    case "guard.approval.decided":
      return `approval decided: ${event.callId} ${event.decision}${event.edited ? " with edited arguments" : ""}${event.reason ? `: ${event.reason}` : ""}`;
    case "tool.call.started":
      return `tool started: ${event.name} ${event.arguments}`;
    case "tool.call.completed":
      return `tool completed: ${event.name} → ${event.output}`;
    case "tool.call.failed":
      return `tool failed: ${event.name}: ${event.error}`;
    case "tool.call.denied":
      return `tool denied: ${event.name} (${event.decision}): ${event.reason}`;
    case "loop.terminated":
      return `run ${event.status}${event.reason ? ` (${event.reason})` : ""} after ${event.rounds} rounds`;
    default:
      return undefined;
  }
}

export interface ApprovalResult {
  output: AgentOutput;
  /** The events, as printed. */
  events: string[];
  files: string[];
  trash: string[];
}

export async function main(options: EndpointOptions & { log?: (line: string) => void } = {}): Promise<ApprovalResult> {
  const log = options.log ?? console.log;
  const endpoint = await connectModel(OFFLINE_TURNS, options);
  log(endpoint.banner);
  const workspace = createWorkspace();
  const events: string[] = [];
  try {
    const machine = createReactMachine({
      modelClient: endpoint.modelClient,
      tools: [workspace.deleteFile],
      constraints: [requireApproval({ effectTags: ["destructive"] })],
    });
    const actor = createActor(machine, { input: { messages: [human(TASK)] } });

    actor.on("*", (event) => {
      const line = describeEvent(event);
      if (line === undefined) return;
      events.push(line);
      log(line);
    });
    // One answer per pending call; the run leaves AwaitingApproval once every call is decided.
    actor.on("guard.approval.requested", (event) => {
      const args = JSON.parse(event.arguments || "{}") as { path?: unknown };
      const verdict = review(String(args.path ?? ""));
      if (verdict.approve) actor.send({ type: "guard.approve", callId: event.callId, args: verdict.args });
      else actor.send({ type: "guard.reject", callId: event.callId, reason: verdict.reason });
    });

    actor.start();
    const output = await toPromise(actor);
    failIfFailed(output, log);
    log(output.finalAnswer ?? "");
    return { output, events, files: [...workspace.files.keys()], trash: [...workspace.trash.keys()] };
  } finally {
    await endpoint.close();
  }
}
