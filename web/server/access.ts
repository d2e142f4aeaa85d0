import { DEFAULT_INPUT_LIMITS, inputLimitProblem } from "../../machines/persistence/snapshot-limits.js";
import type { StartRun } from "../protocol.js";
import { HttpError } from "./errors.js";

/** What a request wants to do with an agent or a run. */
export type AuthorizeAction = "start" | "read" | "approve" | "cancel";

export interface AuthorizeContext {
  /** The request as it came (cookies, headers): who is asking is the application's to tell. */
  request: Request;
  action: AuthorizeAction;
  agent: string;
  /** Absent for `start` (the run has no id yet), for an agent's chart and for a thread. */
  runId?: string;
  /**
   * The thread: for `read` of `GET /threads/:threadId` (with the agent of its latest run), and for a
   * `start` on a thread (the new run is given the thread's conversation, so its starter reads it).
   */
  threadId?: string;
}

/** `agentHandler({ authorize })`: asked before every action; false (or a rejected promise's error logged) answers 403. */
export type Authorize = (context: AuthorizeContext) => boolean | Promise<boolean>;

/** Ask `authorize`; a denial is 403 with nothing about the run (not whether it exists, not its agent). */
export async function authorized(authorize: Authorize | undefined, context: AuthorizeContext): Promise<void> {
  if (!authorize) return;
  if ((await authorize(context)) !== true) throw new HttpError(403, "forbidden", "forbidden");
}

/**
 * What a page may put in `POST /runs` for an agent, beyond user messages (`agentHandler({ clientInput })`).
 * `history`: earlier turns of any role (system prompts, assistant tool calls, tool results);
 * `state`: host state to start from. Both off by default: a page could otherwise override the
 * server's instructions or forge tool results.
 */
export interface ClientInputPolicy {
  history?: boolean;
  state?: boolean;
}

/** Refuse what the agent's policy does not let a page send, naming the field and the option that allows it. */
export function checkClientInput(body: StartRun, policy: ClientInputPolicy | undefined): void {
  if (body.state !== undefined && policy?.state !== true) {
    throw new HttpError(400, "invalid_body", `state: this agent does not take host state from a page (the server opts in with agentHandler({ clientInput: { ${body.agent}: { state: true } } }))`, "state");
  }
  if (policy?.history === true) return;
  const index = (body.messages ?? []).findIndex((message) => message.role !== "user");
  if (index >= 0) {
    throw new HttpError(
      400,
      "invalid_body",
      `messages.${index}.role: a page may send only user messages to this agent, not "${body.messages![index]!.role}" (the server opts in with agentHandler({ clientInput: { ${body.agent}: { history: true } } }))`,
      `messages.${index}.role`,
    );
  }
}

/** The run queue's limits on a page's input (deep state would pass the body's schema and fail at the run's first restore). */
export function checkInputLimits(input: { messages?: unknown; state?: unknown }): void {
  const tooBig = inputLimitProblem(input);
  if (tooBig) throw new HttpError(400, "invalid_body", `${tooBig.path || "the body"}: ${tooBig.problem} (limits: ${DEFAULT_INPUT_LIMITS.maxDepth} levels, ${DEFAULT_INPUT_LIMITS.maxChars} characters)`, tooBig.path || undefined);
}
