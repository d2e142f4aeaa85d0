import { afterEach, describe, expect, it } from "vitest";
import { createActor } from "xstate";
import { z } from "zod";
import { ai, human, toolMessage, type AssistantMessage, type Message } from "../../actors/messages.js";
import type { ReasoningItems } from "../../actors/reasoning-items.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { persistAgent, restoreAgent } from "../../machines/persistence/persistence.js";
import { runAgent } from "../../machines/runner.js";
import { replies, type ReceivedRequest } from "../../testing/openai-server.js";
import { responsesTextTurn, responsesToolCallTurn } from "../../testing/responses-turns.js";
import { textTurn } from "../../testing/turns.js";
import { defineTool } from "../../tools/tool.js";
import { approvalFor, awaitingApproval, waitFor } from "../persistence/helpers.js";
import { bodies, clientFor, closeServers, FAST_RESILIENCE, serve } from "./harness.js";

/*
 * Reasoning items are readable only by the endpoint and model that wrote them: every other
 * request (Chat Completions, another model, another endpoint, a fallback) goes without them.
 * Fallbacks stick for the rest of a run once the primary failed, also across a restore, unless
 * `sticky: false`.
 */

afterEach(closeServers);

type Item = Record<string, unknown>;

/** A conversation whose assistant turn carries reasoning items written by `endpoint`/`model`. */
function conversation(endpoint: string, model: string, items: ReasoningItems["items"]): Message[] {
  const assistant: AssistantMessage = ai("Let me look.", [{ id: "call_1", name: "lookup", arguments: "{}" }]);
  assistant.reasoningItems = { api: "responses", endpoint, model, items };
  return [human("Look it up."), assistant, toolMessage("call_1", "found it")];
}

const ITEM = { id: "rs_1", summary: ["I should look it up."], encryptedContent: "enc-1", after: 0 };

const reasoningOf = (body: Item) => (body["input"] as Item[]).filter((item) => item["type"] === "reasoning");

describe("reasoning items go only to the model that wrote them", () => {
  it("the same endpoint and model over the Responses API gets them, in their place before the turn's text", async () => {
    const server = await serve(() => responsesTextTurn("Done."));
    const messages = conversation(server.baseURL, "reasoner", [ITEM]);
    await clientFor(server, { api: "responses", model: "reasoner" }).complete({ messages, tools: [] });
    expect(bodies(server)[0]!["input"]).toEqual([
      { role: "user", content: "Look it up." },
      { type: "reasoning", id: "rs_1", summary: [{ type: "summary_text", text: "I should look it up." }], encrypted_content: "enc-1" },
      { role: "assistant", content: "Let me look." },
      { type: "function_call", call_id: "call_1", name: "lookup", arguments: "{}" },
      { type: "function_call_output", call_id: "call_1", output: "found it" },
    ]);
  });

  it("items written between the calls go back between them (`after` counts the answer items before each)", async () => {
    const server = await serve(() => responsesTextTurn("Done."));
    const assistant: AssistantMessage = ai(null, [
      { id: "call_a", name: "lookup", arguments: '{"q":"a"}' },
      { id: "call_b", name: "lookup", arguments: '{"q":"b"}' },
    ]);
    assistant.reasoningItems = {
      api: "responses",
      endpoint: server.baseURL,
      model: "reasoner",
      items: [
        { id: "rs_a", summary: [], encryptedContent: "enc-a", after: 0 },
        { id: "rs_b", summary: [], encryptedContent: "enc-b", after: 1 },
      ],
    };
    const messages = [human("Both."), assistant, toolMessage("call_a", "A"), toolMessage("call_b", "B")];
    await clientFor(server, { api: "responses", model: "reasoner" }).complete({ messages, tools: [] });
    expect((bodies(server)[0]!["input"] as Item[]).map((item) => item["id"] ?? item["call_id"] ?? item["role"])).toEqual(["user", "rs_a", "call_a", "rs_b", "call_b", "call_a", "call_b"]);
  });

  it("Chat Completions never gets them, not even as fields of the assistant message", async () => {
    const server = await serve(() => textTurn("Done."));
    await clientFor(server, { model: "reasoner" }).complete({ messages: conversation(server.baseURL, "reasoner", [ITEM]), tools: [] });
    const sent = JSON.stringify(bodies(server)[0]);
    expect(sent).not.toContain("rs_1");
    expect(sent).not.toContain("enc-1");
    expect(sent).not.toContain("I should look it up.");
    expect(bodies(server)[0]!["messages"]).toEqual([
      { role: "user", content: "Look it up." },
      { role: "assistant", content: "Let me look.", tool_calls: [{ id: "call_1", type: "function", function: { name: "lookup", arguments: "{}" } }] },
      { role: "tool", tool_call_id: "call_1", content: "found it" },
    ]);
  });

  it("another model on the same endpoint, or the same model on another endpoint, does not get them", async () => {
    const server = await serve(() => responsesTextTurn("Done."));
    await clientFor(server, { api: "responses", model: "other-model" }).complete({ messages: conversation(server.baseURL, "reasoner", [ITEM]), tools: [] });
    await clientFor(server, { api: "responses", model: "reasoner" }).complete({ messages: conversation("http://127.0.0.1:1/v1", "reasoner", [ITEM]), tools: [] });
    for (const body of bodies(server)) expect(reasoningOf(body)).toEqual([]);
  });

  it("with store: false an item without its encrypted content is left out (its id would point at nothing); with store: true it goes by id", async () => {
    const server = await serve(() => responsesTextTurn("Done."));
    const bare = { id: "rs_bare", summary: [], after: 0 };
    await clientFor(server, { api: "responses", model: "reasoner" }).complete({ messages: conversation(server.baseURL, "reasoner", [bare, ITEM]), tools: [] });
    await clientFor(server, { api: "responses", model: "reasoner", store: true }).complete({ messages: conversation(server.baseURL, "reasoner", [bare, ITEM]), tools: [] });
    const [off, on] = bodies(server);
    expect(reasoningOf(off!).map((item) => item["id"])).toEqual(["rs_1"]);
    expect(off).toMatchObject({ store: false });
    expect(reasoningOf(on!)).toEqual([{ type: "reasoning", id: "rs_bare", summary: [] }, expect.objectContaining({ id: "rs_1" })]);
    expect(on).toMatchObject({ store: true });
    // Neither asked for encrypted reasoning: the client was given no reasoning settings.
    expect(off).not.toHaveProperty("include");
  });

  it("a fallback to another model is sent the conversation without them, while the primary got them", async () => {
    const primary = await serve(() => replies.error(500, "primary down"));
    const fallback = await serve(() => responsesTextTurn("Done."));
    const client = clientFor(primary, { api: "responses", model: "reasoner", resilience: { ...FAST_RESILIENCE, maxRetries: 0 }, fallbacks: [{ baseURL: fallback.baseURL, model: "backup" }] });
    const turn = await client.complete({ messages: conversation(primary.baseURL, "reasoner", [ITEM]), tools: [] });
    expect(turn.model).toBe("backup");
    expect(turn.route).toEqual({ fallback: 1, endpoint: fallback.baseURL, model: "backup" });
    expect(reasoningOf(bodies(primary)[0]!)).toHaveLength(1);
    expect(reasoningOf(bodies(fallback)[0]!)).toEqual([]);
  });

  it("a fallback speaking Chat Completions (api: chat) gets plain messages from a Responses primary", async () => {
    const server = await serve((request) => (request.path.endsWith("/responses") ? replies.error(503, "responses down") : textTurn("Done.")));
    const client = clientFor(server, { api: "responses", model: "reasoner", resilience: { ...FAST_RESILIENCE, maxRetries: 0 }, fallbacks: [{ api: "chat" }] });
    const turn = await client.complete({ messages: conversation(server.baseURL, "reasoner", [ITEM]), tools: [] });
    expect(turn.content).toBe("Done.");
    expect(server.requests.map((request) => request.path)).toEqual(["/v1/responses", "/v1/chat/completions"]);
    expect(JSON.stringify(server.requests[1]!.body)).not.toContain("rs_1");
  });
});

/** One server for both models: the primary always fails, the backup answers from its own script. */
async function primaryDownBackupUp(backupTurns: (request: ReceivedRequest, n: number) => ReturnType<typeof textTurn>) {
  let backupCalls = 0;
  return serve((request) => ((request.body as { model?: string }).model === "primary" ? replies.error(500, "primary down") : backupTurns(request, backupCalls++)));
}

const lookup = defineTool({ name: "lookup", description: "Look something up.", parameters: z.object({ q: z.string() }), execute: ({ q }) => `found ${q}` });

const modelsAsked = (requests: readonly ReceivedRequest[]) => requests.map((request) => (request.body as { model: string }).model);

describe("sticky fallbacks", () => {
  const resilience = { ...FAST_RESILIENCE, maxRetries: 1, retryOn: ["server_error" as const] };
  const turns = (_request: ReceivedRequest, n: number) =>
    n === 0 ? responsesToolCallTurn([{ id: "call_1", name: "lookup", args: { q: "x" } }]) : responsesTextTurn("Found x.");

  it("once the primary failed, the run's later calls start at the fallback that answered", async () => {
    const server = await primaryDownBackupUp(turns);
    const machine = createReactMachine({
      modelClient: clientFor(server, { api: "responses", model: "primary", resilience, fallbacks: [{ model: "backup" }] }),
      tools: [lookup],
    });
    const output = await runAgent(machine, { messages: [human("Find x.")] });
    expect(output.status).toBe("succeeded");
    // Round 1: primary, its retry, then the backup. Round 2: straight to the backup.
    expect(modelsAsked(server.requests)).toEqual(["primary", "primary", "backup", "backup"]);
  });

  it("sticky: false keeps today's behaviour: every call starts at the failing primary again", async () => {
    const server = await primaryDownBackupUp(turns);
    const machine = createReactMachine({
      modelClient: clientFor(server, { api: "responses", model: "primary", resilience: { ...resilience, sticky: false }, fallbacks: [{ model: "backup" }] }),
      tools: [lookup],
    });
    await runAgent(machine, { messages: [human("Find x.")] });
    expect(modelsAsked(server.requests)).toEqual(["primary", "primary", "backup", "primary", "primary", "backup"]);
  });

  it("sticky: false can be set in config.resilience (also from jianmu.yaml as resilience.sticky)", async () => {
    const server = await primaryDownBackupUp(turns);
    const machine = createReactMachine({
      modelClient: clientFor(server, { api: "responses", model: "primary" }),
      tools: [lookup],
      config: { resilience: { ...resilience, sticky: false, fallbacks: [{ model: "backup" }] } },
    });
    await runAgent(machine, { messages: [human("Find x.")] });
    expect(modelsAsked(server.requests)).toEqual(["primary", "primary", "backup", "primary", "primary", "backup"]);
  });

  it("the chosen fallback is in the run's snapshot: a restored run goes straight to it", async () => {
    const server = await primaryDownBackupUp(turns);
    const client = () => clientFor(server, { api: "responses", model: "primary", resilience, fallbacks: [{ model: "backup" }] });
    const first = createReactMachine({ modelClient: client(), tools: [lookup], constraints: [approvalFor("lookup")] });
    const actor = createActor(first, { input: { messages: [human("Find x.")] } });
    actor.start();
    await waitFor(actor, awaitingApproval);
    const saved = JSON.parse(JSON.stringify(persistAgent(actor))) as { snapshot: { context: { loop: Record<string, unknown> } } };
    actor.stop();
    expect(saved.snapshot.context.loop["modelRoute"]).toEqual({ fallback: 1, endpoint: server.baseURL, model: "backup" });

    // A new machine and client, as in a new process: the restored run's next call goes to the backup first.
    const again = createReactMachine({ modelClient: client(), tools: [lookup], constraints: [approvalFor("lookup")] });
    const restored = createActor(again, { snapshot: restoreAgent(again, saved) });
    restored.start();
    restored.send({ type: "guard.approve", callId: "call_1" });
    const final = await waitFor(restored, (snapshot) => snapshot.status === "done");
    expect(final.output).toMatchObject({ status: "succeeded", finalAnswer: "Found x." });
    expect(modelsAsked(server.requests)).toEqual(["primary", "primary", "backup", "backup"]);
  });

  it("a route that no longer names the same fallback (the configuration changed) is ignored", async () => {
    const server = await primaryDownBackupUp(() => responsesTextTurn("Hi."));
    const client = clientFor(server, { api: "responses", model: "primary", resilience, fallbacks: [{ model: "backup" }] });
    await client.complete({ messages: [human("hi")], tools: [], route: { fallback: 1, endpoint: server.baseURL, model: "renamed-backup" } });
    expect(modelsAsked(server.requests)).toEqual(["primary", "primary", "backup"]);
  });
});
