import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createActor } from "xstate";
import { z } from "zod";
import { human } from "../../actors/messages.js";
import { ModelError } from "../../actors/model-client.js";
import { resolveModelClient } from "../../actors/openai/openai-model-client.js";
import { renderResult, thrownMessage } from "../../actors/tool-values.js";
import { MemoryCheckpointStore } from "../../machines/persistence/checkpoints/memory-store.js";
import type { AgentEmitted } from "../../machines/contract/events.js";
import { persistAgent, restoreAgent, SnapshotError, type PersistedAgent } from "../../machines/persistence/persistence.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import { replies, startOpenAIServer, toSse, type OpenAIServer, type Reply } from "../../testing/openai-server.js";
import { defineTool } from "../../tools/tool.js";
import { CaseCounter, propertyRuns } from "./process-watch.js";

/*
 * Generated hostile values fed into each boundary, with the invariants of issue 16:
 * - server responses (over real HTTP): a typed outcome (a turn with sane usage, or a ModelError of a
 *   known kind), and no key in the error, the events or the console;
 * - tool results and throws: always text, never "[object Object]", never a throw;
 * - commands sent to a parked run: no throw, the run stays active, a refusal or a decision, and the
 *   next checkpoint restores;
 * - snapshots: restoreAgent gives a snapshot or a SnapshotError, nothing else;
 * - racing copies of a run: the tool runs at most once.
 */

const counter = new CaseCounter();
const MODEL_KINDS = new Set(["http", "stream", "connection", "timeout", "invalid-response", "aborted", "config"]);

// ---- Hostile value generators -----------------------------------------------------------------

const nullProto = (fields: Record<string, unknown>) => Object.assign(Object.create(null) as object, fields);
const cyclic = (fields: Record<string, unknown>) => {
  const value: Record<string, unknown> = { ...fields };
  value["self"] = value;
  return value;
};
/** fast-check prints counterexamples by reading them: these say what they are instead. */
const described = <T extends object>(value: T, text: string): T => Object.defineProperty(value, fc.toStringMethod, { value: () => text });
const throwingGetter = (message: string) =>
  described(
    Object.defineProperty({}, "value", {
      enumerable: true,
      get() {
        throw new Error(message);
      },
    }),
    `{ get value() { throw ${JSON.stringify(message)} } }`,
  );
const throwingProxy = (message: string) =>
  new Proxy(
    {},
    {
      get(_target, key) {
        if (key === fc.toStringMethod) return () => `Proxy(throws ${JSON.stringify(message)})`;
        throw new Error(message);
      },
      ownKeys() {
        throw new Error(message);
      },
      getPrototypeOf() {
        throw new Error(message);
      },
    },
  );
class ExplodingJson {
  toJSON(): never {
    throw new Error("toJSON");
  }
}

/** Anything JSON cannot encode, alone or inside ordinary values. */
const hostileLeaf: fc.Arbitrary<unknown> = fc.oneof(
  fc.bigInt(),
  fc.string().map((s) => Symbol(s)),
  fc.constant(() => 1),
  fc.dictionary(fc.string({ maxLength: 4 }), fc.jsonValue({ maxDepth: 1 })).map(cyclic),
  fc.dictionary(fc.string({ maxLength: 4 }), fc.jsonValue({ maxDepth: 1 })).map(nullProto),
  fc.string().map(throwingGetter),
  fc.string().map(throwingProxy),
  fc.constant(new ExplodingJson()),
  fc.array(fc.tuple(fc.string({ maxLength: 3 }), fc.integer())).map((entries) => new Map(entries)),
  fc.array(fc.anything({ maxDepth: 1 })).map((items) => new Set(items)),
  fc.constantFrom(Number.NaN, Infinity, -Infinity, -0, undefined, null),
  fc.date(),
);
const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  hostileLeaf,
  fc.anything({ maxDepth: 2, withBigInt: true, withMap: true, withSet: true, withNullPrototype: true, withObjectString: true, withBoxedValues: true }),
  fc.dictionary(fc.string({ maxLength: 4 }), hostileLeaf),
  fc.array(hostileLeaf, { maxLength: 3 }),
);

// ---- Tool results and throws ------------------------------------------------------------------

describe("tool results and throws", () => {
  it("any result becomes text, never [object Object]; any throw becomes a message; nothing throws", () => {
    fc.assert(
      fc.property(hostileValue, (value) => {
        counter.tick();
        const rendered = renderResult(value);
        expect(typeof rendered.text).toBe("string");
        expect(rendered.text).not.toMatch(/^\[object \w+\]$/);
        const message = thrownMessage(value);
        expect(typeof message).toBe("string");
        expect(message.length).toBeGreaterThan(0);
        expect(message).not.toMatch(/^\[object \w+\]$/);
      }),
      { numRuns: propertyRuns(200) },
    );
  });

  it("through a run: a tool returning or throwing any of them gives an observation and the run goes on", async () => {
    await fc.assert(
      fc.asyncProperty(hostileValue, fc.boolean(), async (value, throws) => {
        counter.tick();
        const tool = defineTool({
          name: "probe",
          description: "hostile",
          parameters: z.object({}),
          execute: () => {
            if (throws) throw value;
            return value;
          },
        });
        const store = new MemoryCheckpointStore();
        const machine = createReactMachine({ modelClient: scriptedModel([{ toolCalls: [{ id: "c", name: "probe", arguments: {} }] }, { content: "on" }]), tools: [tool], configFile: false, journal: store });
        const actor = createActor(machine, { input: { messages: [human("go")], runId: "run-prop" } });
        const saved: string[] = [];
        actor.subscribe(() => saved.push(JSON.stringify(persistAgent(actor))));
        actor.start();
        await new Promise<void>((resolve) => actor.subscribe({ complete: resolve }));
        const output = actor.getSnapshot().output!;
        expect(output.status).toBe("succeeded");
        const observation = output.messages.find((m) => m.role === "tool")!;
        expect(typeof observation.content).toBe("string");
        expect(observation.content).not.toMatch(/\[object Object\]/);
        for (const text of saved) expect(() => restoreAgent(machine, text)).not.toThrow();
      }),
      { numRuns: propertyRuns(60) },
    );
  });
});

// ---- Commands sent to a parked run --------------------------------------------------------------

const echo = defineTool({ name: "echo", description: "Say it back", parameters: z.object({ text: z.string() }), execute: ({ text }) => text });

describe("commands sent to a parked run", () => {
  const field = fc.oneof(hostileValue, fc.constant("call_1"), fc.string({ maxLength: 6 }), fc.constant(undefined));
  const command = fc.oneof(
    fc.record({ type: fc.constant("guard.approve"), callId: field, args: fc.oneof(field, fc.record({ text: fc.oneof(fc.string(), hostileLeaf) })) }, { requiredKeys: ["type"] }),
    fc.record({ type: fc.constant("guard.reject"), callId: field, reason: field }, { requiredKeys: ["type"] }),
    fc.record({ type: fc.constant("agent.cancel"), reason: field }, { requiredKeys: ["type"] }),
  );

  it("never throw, always end in a refusal, a decision or a cancel, and the next checkpoint restores", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(command, { minLength: 1, maxLength: 4 }), async (commands) => {
        counter.tick();
        const machine = createReactMachine({ modelClient: scriptedModel([{ toolCalls: [{ id: "call_1", name: "echo", arguments: { text: "hi" } }] }, { content: "done" }]), tools: [echo], constraints: [() => ({ decision: "pending" })], configFile: false });
        const actor = createActor(machine, { input: { messages: [human("go")] } });
        const events: AgentEmitted[] = [];
        actor.on("*", (e) => events.push(e as AgentEmitted));
        actor.start();
        await new Promise<void>((resolve) => actor.on("guard.approval.requested", () => resolve()));
        for (const c of commands) {
          // A well-formed cancel (or the last decision) may have ended the run: nothing waits any more.
          if (actor.getSnapshot().status !== "active") break;
          const before = events.length;
          expect(() => actor.send(c as never)).not.toThrow();
          const answered = events.slice(before).map((e) => e.type);
          if (actor.getSnapshot().status === "active" && (c.type === "guard.approve" || c.type === "guard.reject")) {
            expect(answered.some((t) => t === "guard.approval.refused" || t === "guard.approval.decided")).toBe(true);
          }
          for (const e of events.slice(before)) expect(() => JSON.stringify(e)).not.toThrow();
          const saved = JSON.stringify(persistAgent(actor));
          expect(() => restoreAgent(machine, saved)).not.toThrow();
        }
        actor.stop();
      }),
      { numRuns: propertyRuns(80) },
    );
  });
});

// ---- Snapshots ------------------------------------------------------------------------------------

describe("snapshots", () => {
  let parked: PersistedAgent;
  const machine = () => createReactMachine({ modelClient: scriptedModel([{ content: "ok" }]), tools: [echo], constraints: [() => ({ decision: "pending" })], configFile: false });
  beforeAll(async () => {
    const first = createReactMachine({ modelClient: scriptedModel([{ toolCalls: [{ id: "call_1", name: "echo", arguments: { text: "hi" } }] }]), tools: [echo], constraints: [() => ({ decision: "pending" })], configFile: false });
    const actor = createActor(first, { input: { messages: [human("go")], runId: "run-prop" } });
    const requested = new Promise<void>((resolve) => actor.on("guard.approval.requested", () => resolve()));
    actor.start();
    await requested;
    parked = persistAgent(actor);
    actor.stop();
  });

  const planted = fc.oneof(
    fc.jsonValue({ maxDepth: 3 }),
    fc.integer({ min: 400, max: 3_000 }).map((depth) => {
      let value: unknown = 1;
      for (let i = 0; i < depth; i++) value = [value];
      return value;
    }),
    fc.integer({ min: 1, max: 3_000_000 }).map((n) => "s".repeat(n)),
  );

  it("restoreAgent gives a snapshot or a SnapshotError, whatever is planted where", () => {
    const m = machine();
    const limits = { maxDepth: 500, maxChars: 1_000_000 };
    fc.assert(
      fc.property(planted, fc.constantFrom("state", "loop", "children", "root"), fc.boolean(), (value, where, asText) => {
        counter.tick();
        const copy = structuredClone(parked) as unknown as Record<string, Record<string, Record<string, unknown>>>;
        const snapshot = copy["snapshot"]!;
        if (where === "state") (snapshot["context"]!["state"] as Record<string, unknown>)["planted"] = value;
        if (where === "loop") (snapshot["context"]!["loop"] as Record<string, unknown>)["planted"] = value;
        if (where === "children") snapshot["children"]!["planted"] = value;
        if (where === "root") (copy as Record<string, unknown>)["planted"] = value;
        try {
          restoreAgent(m, asText ? JSON.stringify(copy) : copy, limits);
        } catch (error) {
          expect(error).toBeInstanceOf(SnapshotError);
        }
      }),
      { numRuns: propertyRuns(120) },
    );
  });
});

// ---- Server responses, over real HTTP --------------------------------------------------------------

describe("server responses", () => {
  let server: OpenAIServer;
  let next: Reply | undefined;
  beforeAll(async () => {
    server = await startOpenAIServer({ respond: () => next ?? replies.error(500, "nothing planned") });
  });
  afterAll(() => server.close());

  const key = fc.stringMatching(/^[A-Za-z0-9]{12,24}$/).map((s) => `sk-prop-${s}`);
  const count = fc.oneof(fc.integer({ min: -1e6, max: 1e6 }), fc.double({ noNaN: true }), fc.constantFrom(1e300, -0, Number.MAX_SAFE_INTEGER + 2), fc.constant(null));
  const usage = fc.oneof(fc.record({ prompt_tokens: count, completion_tokens: count, total_tokens: count }, { requiredKeys: [] }), fc.constant(null), fc.jsonValue({ maxDepth: 1 }));
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) => JSON.stringify({ id: "c", object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish }] });
  /** A reply that may quote the key anywhere it can: in text, a plain line, an error body, a header. */
  const reply = (secret: string) =>
    fc.oneof(
      usage.map((u) => replies.sse(`data: ${chunk({ role: "assistant", content: "" })}\n\ndata: ${chunk({ content: "ok" }, "stop")}\n\ndata: ${JSON.stringify({ id: "c", choices: [], usage: u })}\n\ndata: [DONE]\n\n`)),
      fc.string({ maxLength: 30 }).map((junk) => replies.sse(`data: ${junk.replace(/\n/g, " ")} ${secret}\n\n`)),
      fc.integer({ min: 0, max: 3 }).map((cut) => replies.sse(toSse([chunk({ role: "assistant" }), `not json ${secret}`]).split("\n\n").slice(0, cut).join("\n\n") + "\n\n")),
      fc.constantFrom(400, 401, 403, 429, 500, 503).map((status) => replies.error(status, `bad key ${secret}`, { headers: { "x-echo": secret } })),
      fc.constant(replies.sse(`data: ${JSON.stringify({ error: { message: `revoked ${secret}` } })}\n\n`)),
      fc.constant<Reply>({ kind: "text", status: 200, headers: { "content-type": "application/json" }, body: `{"half": "${secret}` }),
    );

  it("every reply ends in a turn with sane usage or a typed ModelError, and the key is in neither", async () => {
    await fc.assert(
      fc.asyncProperty(key.chain((secret) => fc.tuple(fc.constant(secret), reply(secret))), async ([secret, planned]) => {
        counter.tick();
        next = planned;
        const events: unknown[] = [];
        const logged: unknown[] = [];
        const { error: saved } = console;
        console.error = (...args: unknown[]) => void logged.push(args);
        try {
          const client = resolveModelClient({ baseURL: server.baseURL, apiKey: secret, model: "m", stream: true, resilience: { maxRetries: 0 } });
          const outcome = await client.complete({ messages: [human("hi")], tools: [] }, { onEvent: (e) => events.push(e) }).then(
            (turn) => ({ turn }),
            (error: unknown) => ({ error }),
          );
          if ("turn" in outcome) {
            const { promptTokens, completionTokens, totalTokens } = outcome.turn.usage;
            for (const n of [promptTokens, completionTokens, totalTokens]) expect(Number.isSafeInteger(n) && n >= 0).toBe(true);
          } else {
            expect(outcome.error).toBeInstanceOf(ModelError);
            expect(MODEL_KINDS.has((outcome.error as ModelError).kind)).toBe(true);
            expect(String((outcome.error as Error).message)).not.toContain(secret);
            expect(JSON.stringify(outcome.error)).not.toContain(secret);
          }
          expect(JSON.stringify(events)).not.toContain(secret);
          expect(JSON.stringify(logged)).not.toContain(secret);
        } finally {
          console.error = saved;
        }
      }),
      { numRuns: propertyRuns(80) },
    );
  });
});

// ---- At most once ---------------------------------------------------------------------------------

describe("racing copies of one run", () => {
  it("whatever the number of copies and the order of their approvals, the tool runs at most once", async () => {
    const askToRecord = { toolCalls: [{ id: "call_rec", name: "echo", arguments: { text: "once" } }] };
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 4 }), fc.array(fc.nat(3), { minLength: 1, maxLength: 8 }), async (copies, order) => {
        counter.tick();
        const store = new MemoryCheckpointStore();
        const runs: string[] = [];
        const tool = defineTool({ name: "echo", description: "d", parameters: z.object({ text: z.string() }), execute: async ({ text }) => (runs.push(text), await Promise.resolve(), text) });
        const first = createReactMachine({ modelClient: scriptedModel([askToRecord]), tools: [tool], constraints: [() => ({ decision: "pending" })], journal: store, configFile: false });
        const parkedActor = createActor(first, { input: { messages: [human("go")], runId: "run-race" } });
        const requested = new Promise<void>((resolve) => parkedActor.on("guard.approval.requested", () => resolve()));
        parkedActor.start();
        await requested;
        const saved = JSON.stringify(persistAgent(parkedActor));
        parkedActor.stop();
        const actors = Array.from({ length: copies }, () => {
          const machine = createReactMachine({ modelClient: scriptedModel([{ content: "done" }]), tools: [tool], constraints: [() => ({ decision: "pending" })], journal: store, configFile: false });
          const actor = createActor(machine, { snapshot: restoreAgent(machine, saved) });
          actor.start();
          return actor;
        });
        for (const index of order) actors[index % copies]!.send({ type: "guard.approve", callId: "call_rec" });
        for (const actor of actors) actor.send({ type: "guard.approve", callId: "call_rec" });
        await Promise.all(actors.map((actor) => new Promise<void>((resolve) => (actor.getSnapshot().status === "done" ? resolve() : actor.subscribe({ complete: resolve })))));
        expect(runs.length).toBeLessThanOrEqual(1);
        expect(runs).toEqual(["once"]);
      }),
      { numRuns: propertyRuns(40) },
    );
  });

  it("ran at least 500 generated cases in total", () => {
    if (process.env["JIANMU_PROPERTY_RUNS"] === undefined) expect(counter.count).toBeGreaterThanOrEqual(500);
  });
});
