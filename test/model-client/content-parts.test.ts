import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import type { ContextBuilder } from "../../actors/context-builder.js";
import { human, MessageSchema, type ContentPart } from "../../actors/messages.js";
import { ModelError } from "../../actors/model-client.js";
import { fromWireMessages, toWireMessages } from "../../actors/openai/openai-wire.js";
import { toResponsesParts } from "../../actors/openai/content-parts-wire.js";
import { toolContent } from "../../actors/tool-content.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { runAgent } from "../../machines/runner.js";
import { defineTool } from "../../tools/tool.js";
import { textTurn } from "../../testing/turns.js";
import { responsesTextTurn, responsesToolCallTurn } from "../../testing/responses-turns.js";
import { loadRecording, replayInteractions, wireMediaOf } from "../../testing/recordings.js";
import { bodies, clientFor, closeServers, fixture, serve } from "./harness.js";

/*
 * Images, documents and audio over real HTTP: what the loopback server receives for each part
 * type, checked against requests OpenAI really accepted (pydantic-ai's cassettes, replayed with
 * `checkMedia`, which answers 400 when the bytes or URLs differ from the recorded ones); a tool
 * returning an image; and a model that cannot take a part refusing it before any request.
 */

afterEach(closeServers);

/** The cassettes' runs had no system prompt: send the history as it is, so requests compare 1:1. */
const historyOnly: ContextBuilder = (input) => [...input.messages];

type WireMessage = { role: string; content: unknown; tool_call_id?: string };

function recorded(name: string) {
  const recording = loadRecording(fixture(`pydantic-ai/test_openai/${name}.yaml`));
  const requests = recording.interactions.map((interaction) => interaction.request as { messages: WireMessage[]; model: string });
  return { recording, requests };
}

/** The base64 of a recorded `data:` URL. */
const base64Of = (dataUrl: string) => dataUrl.slice(dataUrl.indexOf(",") + 1);

describe("a user turn with parts, as Chat Completions parts", () => {
  it("a PDF goes as a file part with its data: URL and name, the request OpenAI answered", async () => {
    const { recording, requests } = recorded("test_document_as_binary_content_input");
    const sentParts = requests[0]!.messages[0]!.content as { type: string; text?: string; file?: { file_data: string; filename: string } }[];
    const pdf = sentParts[1]!.file!;
    const server = await serve(replayInteractions(recording.interactions, { checkMedia: true }));
    const machine = createReactMachine({ modelClient: clientFor(server, { model: "gpt-4o", stream: false, accepts: { file: true } }), contextBuilder: historyOnly, configFile: false });

    const output = await runAgent(machine, {
      messages: [human([{ type: "text", text: sentParts[0]!.text! }, { type: "file", data: base64Of(pdf.file_data), mediaType: "application/pdf", filename: pdf.filename }])],
    });

    expect(output.status).toBe("succeeded");
    expect(output.finalAnswer).toBe('The main content of the document is "Dummy PDF file."');
    const sent = bodies(server)[0]!["messages"] as WireMessage[];
    expect(sent[0]!.content).toEqual(requests[0]!.messages[0]!.content);
    expect(wireMediaOf(bodies(server)[0])).toEqual([`file: ${pdf.file_data}`]);
  });

  it("an mp3 goes as input_audio (plain base64, format mp3) to an audio model", async () => {
    const { recording, requests } = recorded("test_audio_as_binary_content_input");
    const sentParts = requests[0]!.messages[0]!.content as { type: string; text?: string; input_audio?: { data: string; format: string } }[];
    const server = await serve(replayInteractions(recording.interactions, { checkMedia: true }));
    const machine = createReactMachine({ modelClient: clientFor(server, { model: "gpt-4o-audio-preview", stream: false }), contextBuilder: historyOnly, configFile: false });

    const output = await runAgent(machine, {
      messages: [human([{ type: "text", text: sentParts[0]!.text! }, { type: "file", data: sentParts[1]!.input_audio!.data, mediaType: "audio/mpeg" }])],
    });

    expect(output.status).toBe("succeeded");
    expect(output.finalAnswer).toBe("The name mentioned in the audio is Marcelo.");
    expect((bodies(server)[0]!["messages"] as WireMessage[])[0]!.content).toEqual(requests[0]!.messages[0]!.content);
  });

  it("an image as data goes as image_url with a data: URL; a URL as it is, detail kept", async () => {
    const server = await serve(() => textTurn("Two images."));
    const client = clientFor(server, { model: "gpt-4o-mini" });
    const png = Buffer.from("89504e470d0a1a0a", "hex").toString("base64");
    await client.complete({
      messages: [human([{ type: "text", text: "Compare." }, { type: "image", data: png, mediaType: "image/png" }, { type: "image", url: "https://example.com/a.jpg", detail: "low" }])],
      tools: [],
    });
    expect((bodies(server)[0]!["messages"] as WireMessage[])[0]!.content).toEqual([
      { type: "text", text: "Compare." },
      { type: "image_url", image_url: { url: `data:image/png;base64,${png}` } },
      { type: "image_url", image_url: { url: "https://example.com/a.jpg", detail: "low" } },
    ]);
  });

  it("a wrong image is a 400 from the checking replay: the check can fail", async () => {
    const { recording } = recorded("test_document_as_binary_content_input");
    const server = await serve(replayInteractions(recording.interactions, { checkMedia: true }));
    const machine = createReactMachine({ modelClient: clientFor(server, { model: "gpt-4o", stream: false, accepts: { file: true } }), contextBuilder: historyOnly, configFile: false });
    const output = await runAgent(machine, { messages: [human([{ type: "file", data: "JVBERi0xLjQK", mediaType: "application/pdf" }])] });
    expect(output.status).toBe("failed");
    expect(output.termination?.error?.message).toMatch(/HTTP 400: test server: request 0 media part 1 differs from the recorded request/);
  });
});

describe("a tool returning an image", () => {
  const kiwi = () => {
    const { recording, requests } = recorded("test_image_as_binary_content_tool_response");
    const follow = requests[1]!.messages[3]!.content as { type: string; image_url?: { url: string } }[];
    return { recording, requests, dataUrl: follow[1]!.image_url!.url };
  };

  it("travels in a user message after the tool messages, the shape OpenAI answered for this very image", async () => {
    const { recording, requests, dataUrl } = kiwi();
    const server = await serve(replayInteractions(recording.interactions, { checkMedia: true }));
    const getImage = defineTool({
      name: "get_image",
      description: "Get the image.",
      parameters: z.object({}),
      execute: () => toolContent([{ type: "image", data: base64Of(dataUrl), mediaType: "image/jpeg" }]),
    });
    const machine = createReactMachine({
      modelClient: clientFor(server, { model: "gpt-4o", stream: false }),
      tools: [getImage],
      contextBuilder: historyOnly,
      config: { toolChoice: "auto" },
      configFile: false,
    });

    const output = await runAgent(machine, { messages: fromWireMessages(requests[0]!.messages) });

    expect(output.status).toBe("succeeded");
    expect(output.finalAnswer).toBe("The fruit in the image is a kiwi.");
    // The conversation keeps the tool result as the tool gave it: one image part, no wire artefacts.
    const toolTurn = output.messages.find((m) => m.role === "tool")!;
    expect(toolTurn.content).toEqual([{ type: "image", data: base64Of(dataUrl), mediaType: "image/jpeg" }]);
    const second = bodies(server)[1]!["messages"] as WireMessage[];
    expect(second.map((m) => m.role)).toEqual(["user", "assistant", "tool", "user"]);
    expect(second[2]!.content).toMatch(/^\[image: image\/jpeg, 96\.3 KB: attached in the next message\]$/);
    expect(second[3]!.content).toEqual([
      { type: "text", text: `The attachment of tool result ${second[2]!.tool_call_id} (get_image):` },
      { type: "image_url", image_url: { url: dataUrl } },
    ]);
    expect(wireMediaOf(bodies(server)[1])).toEqual(wireMediaOf(requests[1]));
  });

  it("by URL, and several tools' images follow the whole batch of tool messages", async () => {
    const { recording, requests } = recorded("test_image_url_tool_response");
    const imageUrl = ((requests[1]!.messages[3]!.content as { image_url?: { url: string } }[])[1]!.image_url!.url);
    const server = await serve(replayInteractions(recording.interactions, { checkMedia: true }));
    const getImage = defineTool({ name: "get_image", description: "Get the image.", parameters: z.object({}), execute: () => toolContent([{ type: "image", url: imageUrl }]) });
    const machine = createReactMachine({ modelClient: clientFor(server, { model: "gpt-4o", stream: false }), tools: [getImage], contextBuilder: historyOnly, configFile: false });
    const output = await runAgent(machine, { messages: fromWireMessages(requests[0]!.messages) });
    expect(output.status).toBe("succeeded");
    expect(output.finalAnswer).toBe("The image shows a potato.");

    const wire = toWireMessages([
      human("Look at both."),
      { role: "assistant", content: null, toolCalls: [{ id: "a", name: "shot", arguments: "{}" }, { id: "b", name: "shot", arguments: "{}" }] },
      { role: "tool", toolCallId: "a", name: "shot", content: [{ type: "text", text: "first" }, { type: "image", url: "https://example.com/1.png" }] },
      { role: "tool", toolCallId: "b", name: "shot", content: [{ type: "image", url: "https://example.com/2.png" }, { type: "image", url: "https://example.com/3.png" }] },
    ]);
    expect(wire.map((m) => m.role)).toEqual(["user", "assistant", "tool", "tool", "user"]);
    expect(wire[2]!.content).toBe("first\n[image: https://example.com/1.png: attached in the next message]");
    expect(wireMediaOf({ messages: wire })).toEqual(["image_url: https://example.com/1.png", "image_url: https://example.com/2.png", "image_url: https://example.com/3.png"]);
    expect((wire[4]!.content as { text?: string }[])[2]!.text).toBe("The 2 attachments of tool result b (shot):");
  });

  it("a tool's invalid parts are an invalid_output observation, not a crash", async () => {
    const server = await serve((request) => (request.index === 0 ? textTurnCalling() : textTurn("ok")));
    const bad = defineTool({ name: "shot", description: "Get the image.", parameters: z.object({}), execute: () => toolContent([{ type: "image", data: "AAAA" } as ContentPart]) });
    const machine = createReactMachine({ modelClient: clientFor(server), tools: [bad], configFile: false });
    const output = await runAgent(machine, { messages: [human("shoot")] });
    const observation = output.messages.find((m) => m.role === "tool")!;
    expect(observation.isError).toBe(true);
    expect(observation.content).toBe("Error: shot ran, but its toolContent parts are not valid: parts[0].mediaType: is needed with data or blob (e.g. image/png, application/pdf, audio/wav)");
  });
});

function textTurnCalling() {
  const body = [
    { choices: [{ index: 0, delta: { role: "assistant", tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "shot", arguments: "{}" } }] }, finish_reason: null }] },
    { choices: [{ index: 0, delta: {}, finish_reason: "tool_calls" }] },
  ];
  return { kind: "sse" as const, body: body.map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`).join("") + "data: [DONE]\n\n" };
}

describe("a part the model cannot take is refused before any request", () => {
  const image: ContentPart = { type: "image", data: Buffer.alloc(2048).toString("base64"), mediaType: "image/png" };

  it("a model marked text-only: no request, an error naming the part, the model and the fix", async () => {
    const server = await serve(() => textTurn("never"));
    const machine = createReactMachine({ modelClient: clientFor(server, { model: "llama3", accepts: { image: false } }), configFile: false });
    const output = await runAgent(machine, { messages: [human([{ type: "text", text: "what is this?" }, image])] });

    expect(server.requests).toHaveLength(0);
    expect(output.status).toBe("failed");
    expect(output.termination?.reason).toBe("modelError");
    expect(output.termination?.error?.message).toContain(
      "messages[1] (user) part 2 is an image (image: image/png, 2.0 KB), which model llama3 at " + server.baseURL + " cannot take: it takes text only. " +
        "Use a model that reads images (e.g. gpt-4o-mini), or, if this one does, pass accepts: { image: true } to ModelClient.resolve() (or to this fallback).",
    );
  });

  it("by the model's defaults: gpt-3.5-turbo reads no images; the error is a ModelError with code unsupported_content", async () => {
    const server = await serve(() => textTurn("never"));
    const error = await clientFor(server, { model: "gpt-3.5-turbo" }).complete({ messages: [human([image])], tools: [] }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ModelError);
    expect((error as ModelError).kind).toBe("config");
    expect((error as ModelError).code).toBe("unsupported_content");
    expect((error as ModelError).message).toMatch(/messages\[0\] \(user\) part 1 is an image .* model gpt-3\.5-turbo .* it takes text only/);
    expect(server.requests).toHaveLength(0);
  });

  it("a fallback that reads images takes the call the text-only primary refused", async () => {
    const server = await serve(() => textTurn("A red square."));
    const client = clientFor(server, { model: "gpt-3.5-turbo", fallbacks: [{ model: "gpt-4o-mini" }] });
    const turn = await client.complete({ messages: [human([image])], tools: [] });
    expect(turn.content).toBe("A red square.");
    expect(bodies(server).map((body) => body["model"])).toEqual(["gpt-4o-mini"]);
  });

  it("documents go to OpenAI's own models by default, elsewhere only with accepts.file", async () => {
    const pdf: ContentPart = { type: "file", data: "JVBERi0xLjQK", mediaType: "application/pdf" };
    const server = await serve(() => textTurn("A PDF."));
    const local = await clientFor(server, { model: "qwen2.5-vl" }).complete({ messages: [human([pdf])], tools: [] }).catch((e: unknown) => e);
    expect((local as ModelError).message).toContain("is a document (file: application/pdf, 9 bytes), which model qwen2.5-vl");
    expect((local as ModelError).message).toContain("pass accepts: { file: true }");
    expect(server.requests).toHaveLength(0);
    await clientFor(server, { model: "qwen2.5-vl", accepts: { file: true } }).complete({ messages: [human([pdf])], tools: [] });
    expect((bodies(server)[0]!["messages"] as WireMessage[])[0]!.content).toEqual([{ type: "file", file: { file_data: "data:application/pdf;base64,JVBERi0xLjQK", filename: "document.pdf" } }]);
  });

  it("what the API cannot carry at all is refused the same way: ogg audio, a document by URL", async () => {
    const server = await serve(() => textTurn("never"));
    const audio = clientFor(server, { model: "gpt-4o-audio-preview" });
    const ogg = await audio.complete({ messages: [human([{ type: "file", data: "T2dnUw==", mediaType: "audio/ogg" }])], tools: [] }).catch((e: unknown) => e);
    expect((ogg as ModelError).message).toContain("messages[0] (user) part 1 (audio: audio/ogg, 4 bytes) cannot be sent: Chat Completions takes audio as wav (audio/wav) or mp3 (audio/mpeg) only");
    const byUrl = await clientFor(server, { model: "gpt-4o", accepts: { file: true } })
      .complete({ messages: [human([{ type: "file", url: "https://example.com/a.pdf", mediaType: "application/pdf" }])], tools: [] })
      .catch((e: unknown) => e);
    expect((byUrl as ModelError).message).toContain('Chat Completions takes a document only as data, not by URL: download it and pass data (base64) with mediaType, or use the Responses API (api: "responses")');
    expect(server.requests).toHaveLength(0);
  });
});

describe("the part schema", () => {
  const problem = (content: unknown) => {
    const parsed = MessageSchema.safeParse({ role: "user", content });
    return parsed.success ? undefined : parsed.error.issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`);
  };

  it("a string content stays valid, and each mistake is named with its fix", () => {
    expect(problem("plain text")).toBeUndefined();
    expect(problem([{ type: "image", url: "https://example.com/x.png" }])).toBeUndefined();
    expect(problem([])).toEqual(["content: needs at least one part; for text alone pass a string"]);
    expect(problem([{ type: "image" }])).toEqual(["content.0.url: give the content as url, or as data (base64) with mediaType"]);
    expect(problem([{ type: "image", data: "AAAA" }])).toEqual(["content.0.mediaType: is needed with data or blob (e.g. image/png, application/pdf, audio/wav)"]);
    expect(problem([{ type: "image", data: "data:image/png;base64,AAAA", mediaType: "image/png" }])).toEqual(["content.0.data: must be the base64 text alone: pass a data: URL as url instead"]);
    expect(problem([{ type: "image", url: "file:///etc/passwd" }])).toEqual(["content.0.url: must be an http(s) or data: URL; for bytes you hold, pass data (base64) with mediaType"]);
    expect(problem([{ type: "image", url: "https://example.com/x.png", data: "AAAA", mediaType: "image/png" }])).toEqual(["content.0.data: give one of url, data and blob, not url and data"]);
    expect(problem([{ type: "file", data: "AAAA" }])).toEqual(["content: [0].mediaType: must be a media type such as application/pdf or audio/wav"]);
    expect(problem([{ type: "image", url: 5 }])).toEqual(["content: [0].url: Invalid input: expected string, received number"]);
    expect(problem(5)).toEqual(["content: must be a string or an array of content parts"]);
    expect(problem([{ type: "image", blob: "sha256:abc", mediaType: "image/png" }])).toEqual(["content.0.blob: must be sha256: and 64 lowercase hex digits (a stored blob's reference)"]);
  });
});

describe("the Responses API's form", () => {
  it("input_text, input_image (detail auto unless set), input_file by data or URL; no audio", () => {
    const place = (i: number) => `messages[0] (user) part ${i + 1}`;
    expect(
      toResponsesParts(
        [
          { type: "text", text: "Read these." },
          { type: "image", data: "AAAA", mediaType: "image/png" },
          { type: "image", url: "https://example.com/x.png", detail: "high" },
          { type: "file", data: "JVBERi0xLjQK", mediaType: "application/pdf", filename: "a.pdf" },
          { type: "file", url: "https://example.com/b.pdf", mediaType: "application/pdf" },
        ],
        place,
      ),
    ).toEqual([
      { type: "input_text", text: "Read these." },
      { type: "input_image", image_url: "data:image/png;base64,AAAA", detail: "auto" },
      { type: "input_image", image_url: "https://example.com/x.png", detail: "high" },
      { type: "input_file", file_data: "data:application/pdf;base64,JVBERi0xLjQK", filename: "a.pdf" },
      { type: "input_file", file_url: "https://example.com/b.pdf" },
    ]);
    expect(() => toResponsesParts([{ type: "file", data: "AAAA", mediaType: "audio/wav" }], place)).toThrow(/the Responses API takes no audio input: use Chat Completions \(api: "chat"\)/);
  });
});

describe("parts over the Responses API, end to end", () => {
  it("a user's image goes as input_image and a tool's image inside its function_call_output", async () => {
    const server = await serve((request) =>
      request.index === 0 ? responsesToolCallTurn([{ id: "call_img", name: "get_image", args: {} }]) : responsesTextTurn("Two kiwis."),
    );
    const getImage = defineTool({
      name: "get_image",
      description: "Get the image.",
      parameters: z.object({}),
      execute: () => toolContent([{ type: "text", text: "the second photo" }, { type: "image", data: "BBBB", mediaType: "image/jpeg" }]),
    });
    const machine = createReactMachine({
      modelClient: clientFor(server, { model: "gpt-5-mini", api: "responses" }),
      tools: [getImage],
      contextBuilder: historyOnly,
      configFile: false,
    });

    const output = await runAgent(machine, { messages: [human([{ type: "text", text: "What fruit?" }, { type: "image", data: "AAAA", mediaType: "image/png" }])] });

    expect(output.termination).toBeUndefined();
    const [first, second] = bodies(server) as { input: Record<string, unknown>[] }[];
    expect(server.requests.every((r) => r.path.endsWith("/responses"))).toBe(true);
    expect(first!.input[0]).toEqual({
      role: "user",
      content: [
        { type: "input_text", text: "What fruit?" },
        { type: "input_image", image_url: "data:image/png;base64,AAAA", detail: "auto" },
      ],
    });
    const answer = second!.input.find((item) => item["type"] === "function_call_output");
    expect(answer).toEqual({
      type: "function_call_output",
      call_id: "call_img",
      output: [
        { type: "input_text", text: "the second photo" },
        { type: "input_image", image_url: "data:image/jpeg;base64,BBBB", detail: "auto" },
      ],
    });
    // No follow-up user message on this API: the image rides in the call's output.
    expect(second!.input.filter((item) => item["role"] === "user")).toHaveLength(1);
  });
});
