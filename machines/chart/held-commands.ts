import type { ToolRegistry } from "../../actors/tool-providers.js";
import type { ApproveEvent, RejectEvent } from "../contract/commands.js";

type Decision = ApproveEvent | RejectEvent;

/**
 * Decisions that arrive while a restored run's tool providers are still starting. An approval with
 * edited arguments is checked against the tool's schema, which needs the live tool: instead of
 * refusing it ("still starting"), the agent holds it and applies it when `tools.ready` comes. Once
 * one decision is held, the ones after it wait too, so they are applied in the order they came.
 * Held per agent actor, outside context: until it is applied nothing changed, so a checkpoint has
 * nothing to record.
 */
export class HeldCommands {
  private readonly held = new WeakMap<object, Decision[]>();

  constructor(private readonly registry: ToolRegistry) {}

  /** True when `command` was held (the caller does nothing more with it now). */
  hold(agent: object, runId: string, command: Decision, owner: string | undefined): boolean {
    const queue = this.held.get(agent);
    // Behind a held one: its tools.ready is on the way, and order matters.
    if (queue) {
      queue.push(command);
      return true;
    }
    const needsTools = command.type === "guard.approve" && command.args !== undefined;
    if (!needsTools || !this.registry.starting(runId, owner)) return false;
    this.held.set(agent, [command]);
    return true;
  }

  /** The held decisions, oldest first; the queue is emptied. */
  release(agent: object): Decision[] {
    const queue = this.held.get(agent) ?? [];
    this.held.delete(agent);
    return queue;
  }
}
