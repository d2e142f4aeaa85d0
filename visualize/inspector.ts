import {
  createBrowserInspector,
  createInspector,
  createWebSocketInspector,
  type StatelyInspectionEvent,
} from "@statelyai/inspect";
import type { InspectionEvent, Observer } from "xstate";
import { GuardedWebSocketAdapter } from "./guarded-websocket.js";
import { toPlain, type Plain } from "./plain.js";
import { createRedactor } from "./redact.js";

/**
 * One-line Stately inspector for an agent (dev only):
 *
 *   const inspector = inspectAgent({ mode: "websocket" });
 *   await runAgent(machine, input, { inspect: inspector.inspect });
 *
 * What is sent is filtered: secrets always; prompt text (message contents, system prompts, deltas,
 * tool arguments and outputs, guardrail and guard reasons and feedback) becomes "‹text N chars›"
 * unless `keepText` is set. State names, event
 * types, ids and counts stay. The inspector stops by itself once the run ends, so it never keeps a
 * Node process alive.
 */
export interface InspectAgentOptions {
  /**
   * "websocket" (Node): send to a WebSocket inspector server (`@statelyai/inspect/server`,
   * see docs/visualize.md). "browser": open the Stately inspector in a window or `iframe`.
   * "adapter": send to your own `adapter` (anything with `send(event)`).
   */
  mode: "websocket" | "browser" | "adapter";
  /** websocket: the server (default ws://localhost:8080). browser: the inspector page (default https://stately.ai/inspect). */
  url?: string;
  /** mode "adapter": where the filtered events go. */
  adapter?: { send(event: StatelyInspectionEvent): void; start?: () => void; stop?: () => void };
  /** mode "browser": show the inspector in this iframe instead of a new window. */
  iframe?: HTMLIFrameElement;
  /** mode "browser": the window to use (default the global one). */
  window?: Window;
  /** Send prompt text as is (secrets are still removed). */
  keepText?: boolean;
  /** Exact secret strings to remove wherever they appear. */
  secrets?: readonly (string | undefined)[];
  /** Run even when NODE_ENV is "production" (the inspector is a development tool). */
  force?: boolean;
  /** websocket: milliseconds between reconnection attempts (default 5000; false = try once). */
  retryMs?: number | false;
  /** websocket: how long `stop()` lets a connecting socket open to deliver held events (default 2000 ms). */
  flushMs?: number;
  /** Stop once every inspected root actor has finished (default true). */
  stopWhenDone?: boolean;
  /** Events held while not connected (default 200, the oldest are dropped). */
  maxDeferredEvents?: number;
  /** The environment consulted for NODE_ENV (default process.env). */
  env?: Record<string, string | undefined>;
}

export interface AgentInspector {
  /** False when the inspector did nothing (production, or no window in browser mode); see `reason`. */
  readonly enabled: boolean;
  readonly reason?: string;
  /** Pass as `createActor(machine, { inspect })` or `runAgent(machine, input, { inspect })`. */
  readonly inspect: Observer<InspectionEvent>;
  /** Filtered sending of ready-made Stately events, e.g. `replayRecording(file, inspector.adapter)`. */
  readonly adapter: { send(event: StatelyInspectionEvent): void };
  /** Disconnect (idempotent). A WebSocket still connecting gets up to `flushMs` to deliver held events. */
  stop(): void;
}

/** Remove secrets (and prompt text unless kept) from a Stately inspection event before it is sent. */
export function inspectionSanitizer(options: { keepText?: boolean; secrets?: readonly (string | undefined)[] } = {}) {
  const secrets = options.secrets ? { secrets: options.secrets } : {};
  const redact = createRedactor({ ...secrets, omitText: options.keepText !== true });
  // The machine definition is code: its descriptions and action names are kept, secrets are not.
  const redactSecrets = createRedactor(secrets);
  return (event: StatelyInspectionEvent): StatelyInspectionEvent => {
    const plain = toPlain(event) as { [key: string]: Plain };
    const { definition, ...rest } = plain;
    const out = redact(rest) as { [key: string]: Plain };
    if (typeof definition === "string") {
      try {
        out["definition"] = JSON.stringify(redactSecrets(JSON.parse(definition) as Plain));
      } catch {
        out["definition"] = JSON.stringify({ id: typeof out["name"] === "string" ? out["name"] : "unknown" });
      }
    }
    return out as unknown as StatelyInspectionEvent;
  };
}

const NOOP_OBSERVER: Observer<InspectionEvent> = { next: () => undefined };

function disabled(reason: string): AgentInspector {
  return { enabled: false, reason, inspect: NOOP_OBSERVER, adapter: { send: () => undefined }, stop: () => undefined };
}

export function inspectAgent(options: InspectAgentOptions): AgentInspector {
  const env = options.env ?? (typeof process !== "undefined" ? process.env : {});
  if (env["NODE_ENV"] === "production" && options.force !== true) {
    return disabled('NODE_ENV is "production": the inspector is a development tool (pass force: true to use it anyway)');
  }
  const sanitize = inspectionSanitizer({
    ...(options.keepText !== undefined ? { keepText: options.keepText } : {}),
    ...(options.secrets !== undefined ? { secrets: options.secrets } : {}),
  });
  const common = { serialize: sanitize, ...(options.maxDeferredEvents !== undefined ? { maxDeferredEvents: options.maxDeferredEvents } : {}) };

  let inspector: { inspect: Observer<InspectionEvent>; stop(): void; adapter: { send(event: StatelyInspectionEvent): void } };
  switch (options.mode) {
    case "websocket": {
      // The package's own adapter does the connecting and buffering; the guard owns the retries.
      const inner = createWebSocketInspector({ url: options.url ?? "ws://localhost:8080", autoStart: false, ...common }).adapter;
      const guarded = new GuardedWebSocketAdapter(inner, options.retryMs ?? 5000, options.flushMs ?? 2000);
      inspector = createInspector(guarded, common);
      guarded.start();
      break;
    }
    case "browser": {
      const win = options.window ?? (typeof window !== "undefined" ? window : undefined);
      if (!win) return disabled('mode "browser" needs a window; from Node use mode "websocket"');
      const created = createBrowserInspector({
        ...common,
        window: win,
        ...(options.url !== undefined ? { url: options.url } : {}),
        ...(options.iframe !== undefined ? { iframe: options.iframe } : {}),
      });
      inspector = created;
      break;
    }
    case "adapter": {
      const adapter = options.adapter;
      if (!adapter || typeof adapter.send !== "function") {
        throw new TypeError('inspectAgent: mode "adapter" needs options.adapter with a send(event) method');
      }
      inspector = createInspector(adapter, common);
      adapter.start?.();
      break;
    }
    default:
      throw new TypeError(`inspectAgent: options.mode must be "websocket", "browser" or "adapter", got ${JSON.stringify((options as { mode?: unknown }).mode)}`);
  }

  let stopped = false;
  const stop = () => {
    if (stopped) return;
    stopped = true;
    inspector.stop();
  };
  // Root actors still running; when the last one ends, stop after the inspector's own deferred
  // sends (it converts events on a 0 ms timer) have gone out.
  const runningRoots = new Set<string>();
  const stopWhenDone = options.stopWhenDone !== false;
  const observe = (event: InspectionEvent) => {
    if (stopped) return;
    inspector.inspect.next?.(event);
    if (!stopWhenDone) return;
    const sessionId = event.actorRef.sessionId;
    if (event.type !== "@xstate.snapshot" || event.rootId !== sessionId) return;
    if (event.snapshot.status === "active") runningRoots.add(sessionId);
    else if (runningRoots.delete(sessionId) && runningRoots.size === 0) setTimeout(() => setTimeout(stop, 0), 0);
  };
  return {
    enabled: true,
    inspect: { next: observe },
    adapter: { send: (event) => inspector.adapter.send(sanitize(event)) },
    stop,
  };
}

// Lives in its own file so `jianmu` offers it without loading @statelyai/inspect.
export { combineInspectors } from "./combine-inspectors.js";
export { InspectorAdapterError } from "./guarded-websocket.js";
