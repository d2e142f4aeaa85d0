import { ThreadIdSchema } from "../../machines/contract/context.js";
import type { CheckpointStore } from "../../machines/persistence/checkpoints/store.js";
import { isRunLogStore } from "../../machines/persistence/log/log-store.js";
import { threadConversation } from "../../machines/persistence/log/threads.js";
import type { ReactMachine } from "../../machines/react-machine.js";
import type { ThreadView } from "../protocol.js";
import { authorized, type Authorize } from "./access.js";
import { HttpError, jsonResponse } from "./errors.js";

/** A thread as `GET /threads/:threadId` answers it, and the agent `authorize` is asked about (its latest run's). */
export interface FoundThread {
  agent: string;
  view: ThreadView;
}

/**
 * Read a thread from the handler's store: its runs (oldest first, each with the handler's name for
 * its agent) and the conversation its latest ended run left. The same on a run queue (the runs'
 * agents are the names they were submitted under) and on a checkpoint store (runs started in this
 * process, registered under their machine's id). A thread no run ever used, or whose latest run
 * belongs to no agent of this handler, is a 404: this handler does not serve it.
 */
export async function findThread(store: CheckpointStore | undefined, threadId: string, agents: Readonly<Record<string, ReactMachine>>): Promise<FoundThread> {
  if (!isRunLogStore(store)) {
    const why = store === undefined ? "agentHandler({ store: false }) keeps runs in memory only" : "this handler's checkpoint store does not keep threads";
    throw new HttpError(404, "unknown_thread", `there is no thread ${shown(threadId)}: ${why} (give the handler one of jianmu's stores to use threadId)`);
  }
  const id = ThreadIdSchema.safeParse(threadId);
  if (!id.success) throw new HttpError(404, "unknown_thread", `there is no thread ${shown(threadId)}: a thread id ${id.error.issues[0]!.message}`);
  const runs = await store.threadRuns(id.data);
  const nameOf = (agent: string) => (Object.hasOwn(agents, agent) ? agent : Object.keys(agents).find((name) => agents[name]!.id === agent));
  const latest = runs.at(-1);
  const agent = latest && nameOf(latest.agent);
  if (agent === undefined) throw new HttpError(404, "unknown_thread", `there is no thread ${shown(threadId)} here`);
  const view: ThreadView = {
    threadId: id.data,
    messages: await threadConversation(store, runs),
    runs: runs.map((run) => {
      const name = nameOf(run.agent);
      return { runId: run.runId, ...(name !== undefined ? { agent: name } : {}), status: run.status };
    }),
  };
  return { agent, view };
}

/** `GET /threads/:threadId`: the thread, once `authorize` said the request may `read` it. */
export async function threadResponse(request: Request, threadId: string, handler: { store: () => Promise<CheckpointStore | undefined>; agents: Readonly<Record<string, ReactMachine>>; authorize: Authorize | undefined }): Promise<Response> {
  const { agent, view } = await findThread(await handler.store(), threadId, handler.agents);
  await authorized(handler.authorize, { request, action: "read", agent, threadId: view.threadId });
  return jsonResponse(view);
}

function shown(threadId: string): string {
  return JSON.stringify(threadId.slice(0, 64));
}
