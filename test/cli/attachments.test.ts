import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { replies, startOpenAIServer, type OpenAIServer } from "../../testing/openai-server.js";
import { loadRecording, wireMediaOf } from "../../testing/recordings.js";
import { cleanEnv, ROOT, runCli } from "./cli-harness.js";

/*
 * `jianmu run --image photo.jpg "what is this?"` end to end: the built CLI as a separate process,
 * over real HTTP to a loopback server that answers only when the request carries the photo's
 * bytes as an image part, with what OpenAI really answered for that photo (pydantic-ai's kiwi).
 */

const CASSETTE = join(ROOT, "test/fixtures/openai/pydantic-ai/test_openai/test_image_as_binary_content_tool_response.yaml");

describe("jianmu run --image", () => {
  let server: OpenAIServer;
  let dir: string;
  let kiwiDataUrl: string;
  let recordedAnswer: unknown;

  beforeAll(async () => {
    const [, second] = loadRecording(CASSETTE).interactions;
    const media = wireMediaOf(second!.request);
    kiwiDataUrl = media[0]!.slice("image_url: ".length);
    recordedAnswer = second!.reply.kind === "json" ? second!.reply.body : undefined;
    dir = mkdtempSync(join(tmpdir(), "jianmu-image-"));
    writeFileSync(join(dir, "kiwi.jpg"), Buffer.from(kiwiDataUrl.slice(kiwiDataUrl.indexOf(",") + 1), "base64"));
    writeFileSync(join(dir, "notes.txt"), "not an image");
    // The recorded answer is a whole (not streamed) completion.
    writeFileSync(join(dir, "jianmu.yaml"), "llm:\n  stream: false\n");
    server = await startOpenAIServer({
      respond: (request) => {
        const media = wireMediaOf(request.body);
        if (media.length !== 1 || media[0] !== `image_url: ${kiwiDataUrl}`) return replies.error(400, `expected the photo as one image_url part, got ${media.length} media part(s)`);
        return replies.json(recordedAnswer);
      },
    });
  });
  afterAll(() => server.close());

  it("sends the photo as an image part after the question, and prints the model's answer", async () => {
    const result = await runCli(["run", "--image", "kiwi.jpg", "What fruit is in the image?", "--model", "gpt-4o"], { cwd: dir, env: cleanEnv({ OPENAI_BASE_URL: server.baseURL }) });
    expect(result.stderr).toContain("with image: image/jpeg, 96.3 KB");
    expect(result.code).toBe(0);
    expect(result.stdout).toBe("The fruit in the image is a kiwi.\n");
    const user = (server.requests.at(-1)!.body as { messages: { role: string; content: unknown }[] }).messages.find((m) => m.role === "user")!;
    expect(user.content).toEqual([
      { type: "text", text: "What fruit is in the image?" },
      { type: "image_url", image_url: { url: kiwiDataUrl } },
    ]);
  });

  it("a model known to read text only refuses the photo before any request (exit 1, the fix named)", async () => {
    const before = server.requests.length;
    const result = await runCli(["run", "--image", "kiwi.jpg", "What fruit is in the image?", "--model", "gpt-3.5-turbo"], { cwd: dir, env: cleanEnv({ OPENAI_BASE_URL: server.baseURL }) });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("is an image (image: image/jpeg, 96.3 KB), which model gpt-3.5-turbo");
    expect(result.stderr).toContain("it takes text only");
    expect(result.stderr).toContain("on the command line, say what the model takes with --accepts image,file,audio");
    expect(server.requests.length).toBe(before);
    const told = await runCli(["run", "--image", "kiwi.jpg", "What fruit is in the image?", "--model", "gpt-3.5-turbo", "--accepts", "image"], { cwd: dir, env: cleanEnv({ OPENAI_BASE_URL: server.baseURL }) });
    expect(told.code).toBe(0);
    expect(server.requests.length).toBe(before + 1);
  });

  it("file problems are usage errors naming the flag, before any model call (exit 2)", async () => {
    const env = cleanEnv({ OPENAI_BASE_URL: server.baseURL });
    const before = server.requests.length;
    const missing = await runCli(["run", "--image", "missing.png", "What is this?"], { cwd: dir, env });
    expect(missing.code).toBe(2);
    expect(missing.stderr.trim()).toBe(`jianmu: --image missing.png: no such file (${join(dir, "missing.png")})`);
    const text = await runCli(["run", "--image", "notes.txt", "What is this?"], { cwd: dir, env });
    expect(text.code).toBe(2);
    expect(text.stderr).toContain("--image notes.txt: unknown kind of file; --image takes .png, .jpg, .jpeg, .gif, .webp");
    const accepts = await runCli(["run", "--accepts", "video", "What is this?"], { cwd: dir, env });
    expect(accepts.code).toBe(2);
    expect(accepts.stderr).toContain('--accepts: unknown kind "video"; give a list of image, file and audio');
    expect(server.requests.length).toBe(before);
  });

  it("offline (no endpoint) there is no model to show the photo to: a usage error saying what to set", async () => {
    const result = await runCli(["run", "--image", "kiwi.jpg", "What fruit is in the image?"], { cwd: dir, env: cleanEnv() });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("--image needs a model endpoint: set OPENAI_BASE_URL or OPENAI_API_KEY");
  });
});
