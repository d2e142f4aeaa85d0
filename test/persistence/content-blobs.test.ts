import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { createActor } from "xstate";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { human, type ContentPart } from "../../actors/messages.js";
import { toolContent } from "../../actors/tool-content.js";
import { resolveModelClient } from "../../actors/openai/openai-model-client.js";
import { MIN_BLOB_CHARS, type BlobStore, type StoredBlob } from "../../machines/persistence/blobs.js";
import { loadCheckpoint } from "../../machines/persistence/checkpoints/load-checkpoint.js";
import { MemoryCheckpointStore } from "../../machines/persistence/checkpoints/memory-store.js";
import { SqliteCheckpointStore } from "../../machines/persistence/checkpoints/sqlite-store.js";
import type { CheckpointStore } from "../../machines/persistence/checkpoints/store.js";
import { restoreAgent, type PersistedAgent } from "../../machines/persistence/persistence.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { runAgent } from "../../machines/runner.js";
import { startOpenAIServer, type OpenAIServer } from "../../testing/openai-server.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import { textTurn, toolCallTurn } from "../../testing/turns.js";
import { wireMediaOf } from "../../testing/recordings.js";
import { defineTool } from "../../tools/tool.js";
import { approvalFor, waitFor } from "./helpers.js";

/*
 * Large images and files are stored once per run, not in every checkpoint: a checkpoint refers to
 * them by their SHA-256, loadCheckpoint puts them back, and the saved snapshot does not grow by
 * the image's bytes with each round.
 */

const dirs: string[] = [];
afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));
const servers: OpenAIServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

/** A PNG-sized payload: random bytes, so nothing about it compresses or repeats. */
const IMAGE_BYTES = 300_000;
const image = (bytes = IMAGE_BYTES): ContentPart => ({ type: "image", data: randomBytes(bytes).toString("base64"), mediaType: "image/png" });

/** Records what each save writes: the checkpoint's JSON size, and the blobs put (when the store keeps blobs). */
function measuring(inner: MemoryCheckpointStore, keepsBlobs: boolean) {
  const checkpointBytes: number[] = [];
  const blobBytes: number[] = [];
  const base: CheckpointStore = {
    save: (runId, record) => {
      checkpointBytes.push(JSON.stringify(record).length);
      inner.save(runId, record);
    },
    load: (runId) => inner.load(runId),
    list: () => inner.list(),
    delete: (runId) => inner.delete(runId),
  };
  const blobs: BlobStore = {
    putBlob: (runId, sha256, blob: StoredBlob) => {
      blobBytes.push(blob.data.length);
      inner.putBlob(runId, sha256, blob);
    },
    getBlob: (runId, sha256) => inner.getBlob(runId, sha256),
  };
  return { store: keepsBlobs ? { ...base, ...blobs } : base, checkpointBytes, blobBytes };
}

const ROUNDS = 5;
const note = defineTool({ name: "note", description: "Take a note.", parameters: z.object({ n: z.number() }), execute: ({ n }) => `noted ${n}` });

/** The same run, with or without the image in its first message: ROUNDS - 1 tool rounds, then an answer. */
async function checkpointedRun(store: CheckpointStore, withImage: boolean) {
  const script = [...Array.from({ length: ROUNDS - 1 }, (_, n) => ({ toolCalls: [{ id: `call_${n}`, name: "note", arguments: { n } }] })), { content: "Done." }];
  const machine = createReactMachine({ modelClient: scriptedModel(script), tools: [note], configFile: false });
  const first = withImage ? human([{ type: "text", text: "Describe it." }, image()]) : human([{ type: "text", text: "Describe it." }]);
  return runAgent(machine, { runId: "run-image", messages: [first] }, { checkpoints: store });
}

describe("checkpoint bytes with and without an image, over several rounds", () => {
  it("a store that keeps blobs: each checkpoint is the no-image one plus a reference; the image is written once", async () => {
    const withImage = measuring(new MemoryCheckpointStore(), true);
    const without = measuring(new MemoryCheckpointStore(), true);
    expect((await checkpointedRun(withImage.store, true)).status).toBe("succeeded");
    expect((await checkpointedRun(without.store, false)).status).toBe("succeeded");

    expect(withImage.checkpointBytes.length).toBeGreaterThanOrEqual(ROUNDS * 2);
    expect(withImage.checkpointBytes.length).toBe(without.checkpointBytes.length);
    const extra = withImage.checkpointBytes.map((bytes, i) => bytes - without.checkpointBytes[i]!);
    // A reference is ~150 characters; the model step's saved input holds the messages too, so at most two.
    for (const bytes of extra) expect(bytes).toBeLessThan(500);
    expect(withImage.blobBytes).toEqual([Math.ceil(IMAGE_BYTES / 3) * 4]);
    expect(without.blobBytes).toEqual([]);
    // All writes of the run together: the image once, not once per checkpoint.
    const total = (m: typeof withImage) => m.checkpointBytes.reduce((a, b) => a + b, 0) + m.blobBytes.reduce((a, b) => a + b, 0);
    expect(total(withImage) - total(without)).toBeLessThan(IMAGE_BYTES * 1.34 + 500 * withImage.checkpointBytes.length);
  });

  it("a store without blobs (the measurement can fail): every checkpoint carries the image again", async () => {
    const withImage = measuring(new MemoryCheckpointStore(), false);
    const without = measuring(new MemoryCheckpointStore(), false);
    await checkpointedRun(withImage.store, true);
    await checkpointedRun(without.store, false);
    const extra = withImage.checkpointBytes.map((bytes, i) => bytes - without.checkpointBytes[i]!);
    for (const bytes of extra) expect(bytes).toBeGreaterThan(IMAGE_BYTES * 1.33);
  });

  it("small images stay inline; the live conversation is never changed", async () => {
    const store = new MemoryCheckpointStore();
    const small = { type: "image" as const, data: "A".repeat(MIN_BLOB_CHARS - 4), mediaType: "image/png" };
    const output = await runAgent(createReactMachine({ modelClient: scriptedModel([{ content: "ok" }]), configFile: false }), { runId: "small", messages: [human([small])] }, { checkpoints: store });
    expect(output.messages[0]!.content).toEqual([small]);
    expect(JSON.stringify(store.load("small"))).toContain(small.data);
  });
});

describe("what is stored apart", () => {
  it("a large data: URL too; it comes back as its bytes and media type", async () => {
    const store = new MemoryCheckpointStore();
    const bytes = randomBytes(6_000).toString("base64");
    const output = await runAgent(createReactMachine({ modelClient: scriptedModel([{ content: "ok" }]), configFile: false }), { runId: "url", messages: [human([{ type: "image", url: `data:image/webp;base64,${bytes}` }])] }, { checkpoints: store });
    expect(output.status).toBe("succeeded");
    const saved = JSON.stringify(store.load("url"));
    expect(saved).not.toContain(bytes);
    expect(JSON.stringify(await loadCheckpoint(store, "url"))).toContain(`{"type":"image","mediaType":"image/webp","data":"${bytes}"}`);
  });
});

describe("restoring a run whose checkpoint refers to stored images", () => {
  it("SQLite, a new store instance: loadCheckpoint puts the image back and the resumed request carries it over HTTP", async () => {
    const dir = mkdtempSync(join(tmpdir(), "jianmu-blobs-"));
    dirs.push(dir);
    const path = join(dir, "runs.db");
    const server = await startOpenAIServer({ respond: (request) => (request.index === 0 ? toolCallTurn([{ id: "call_pay", name: "pay", args: {} }]) : textTurn("Paid the invoice in the photo.")) });
    servers.push(server);
    const pay = defineTool({ name: "pay", description: "Pay the invoice.", parameters: z.object({}), execute: () => "paid" });
    const make = (journal: SqliteCheckpointStore) =>
      createReactMachine({
        name: "Payer",
        modelClient: resolveModelClient({ baseURL: server.baseURL, apiKey: "test", model: "gpt-4o-mini" }),
        tools: [pay],
        constraints: [approvalFor("pay")],
        journal,
        configFile: false,
      });
    const photo = image(50_000);

    const first = new SqliteCheckpointStore({ path });
    const machine = make(first);
    const actor = createActor(machine, { input: { runId: "photo-run", messages: [human([{ type: "text", text: "Pay this." }, photo])] } });
    const { checkpointAgent } = await import("../../machines/persistence/checkpoints/checkpoint-agent.js");
    const handle = checkpointAgent(actor, first);
    actor.start();
    await waitFor(actor, (snapshot) => snapshot.hasTag("approval"));
    await handle.flush();
    actor.stop();
    first.close();

    const second = new SqliteCheckpointStore({ path });
    const saved = second.load("photo-run")!;
    const text = JSON.stringify(saved);
    expect(text).not.toContain((photo as { data: string }).data.slice(0, 100));
    expect(text).toMatch(/"blob":"sha256:[0-9a-f]{64}"/);
    expect(() => restoreAgent(make(second), saved)).toThrow(/keeps large images or files by reference.*loadCheckpoint\(store, runId\)/);

    const loaded = (await loadCheckpoint(second, "photo-run"))!;
    const again = make(second);
    const resumed = createActor(again, { snapshot: restoreAgent(again, loaded) });
    const done = new Promise<unknown>((resolve) => resumed.subscribe({ complete: () => resolve(resumed.getSnapshot().output) }));
    resumed.start();
    resumed.send({ type: "guard.approve", callId: "call_pay" });
    const output = (await done) as { status: string; finalAnswer: string; messages: { content: unknown }[] };
    second.close();

    expect(output.status).toBe("succeeded");
    expect(output.messages[0]!.content).toEqual([{ type: "text", text: "Pay this." }, photo]);
    expect(server.requests).toHaveLength(2);
    const dataUrl = `data:image/png;base64,${(photo as { data: string }).data}`;
    expect(wireMediaOf(server.requests[1]!.body)).toEqual([`image_url: ${dataUrl}`]);
  });

  it("a blob the store lost: loadCheckpoint says which, and the run is not restored half-way", async () => {
    const store = new MemoryCheckpointStore();
    await checkpointedRun(store, true);
    const record = store.load("run-image") as PersistedAgent;
    const fresh = new MemoryCheckpointStore();
    fresh.save("run-image", record);
    await expect(loadCheckpoint(fresh, "run-image")).rejects.toThrow(/checkpoint of run run-image refers to stored content sha256:[0-9a-f]{64} that its store does not have/);
  });

  it("deleting the run deletes its blobs", async () => {
    const store = new MemoryCheckpointStore();
    await checkpointedRun(store, true);
    const ref = /"blob":"sha256:([0-9a-f]{64})"/.exec(JSON.stringify(store.load("run-image")))![1]!;
    expect(store.getBlob("run-image", ref)).toBeDefined();
    store.delete("run-image");
    expect(store.getBlob("run-image", ref)).toBeUndefined();
  });
});

describe("a tool returning a screenshot every round", () => {
  it("each new image is stored once (the same image twice: once), each checkpoint grows by a reference", async () => {
    const shots = [image(20_000), image(20_000)];
    let n = 0;
    // Round 1 and 3 show the same screen, round 2 another one.
    const screenshot = defineTool({ name: "screenshot", description: "Look at the screen.", parameters: z.object({}), execute: () => toolContent([shots[n++ % 2 === 1 ? 1 : 0]!]) });
    const { store, checkpointBytes, blobBytes } = measuring(new MemoryCheckpointStore(), true);
    const script = [0, 1, 2].map((i) => ({ toolCalls: [{ id: `shot_${i}`, name: "screenshot", arguments: {} }] }));
    const output = await runAgent(createReactMachine({ modelClient: scriptedModel([...script, { content: "Seen." }]), tools: [screenshot], configFile: false }), { runId: "shots", messages: [human("Watch.")] }, { checkpoints: store });
    expect(output.status).toBe("succeeded");
    expect(blobBytes).toHaveLength(2);
    expect(Math.max(...checkpointBytes)).toBeLessThan(20_000);
    const restored = await loadCheckpoint(store, "shots");
    const toolParts = JSON.stringify(restored).match(/"data":"/g) ?? [];
    expect(toolParts.length).toBeGreaterThanOrEqual(3);
  });
});
