// A small stdio MCP server for the edge cases the reference servers do not cover: a paged tool
// list, names the model API rejects, isError results, every content type, a tool without
// annotations, a slow tool that records cancellation, and a server that refuses to exit.
// Behaviour is chosen with environment variables (see below).
import { appendFileSync } from "node:fs";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const env = process.env;
/** FIXTURE_FAIL_START=1: complain on stderr and exit before speaking MCP. */
if (env.FIXTURE_FAIL_START === "1") {
  process.stderr.write("fixture: cannot open the database /nowhere/db.sqlite\n");
  process.exit(3);
}
/** FIXTURE_HANG=1: start, then never answer (stdin is not even read). */
if (env.FIXTURE_HANG === "1") {
  setInterval(() => undefined, 1000);
  await new Promise(() => undefined);
}
/** FIXTURE_PAGE_SIZE: tools per tools/list page (default: all on one page). */
const pageSize = Number(env.FIXTURE_PAGE_SIZE ?? "1000");
/** FIXTURE_LOG: a file that records calls and cancellations, one line each. */
const log = (line) => env.FIXTURE_LOG && appendFileSync(env.FIXTURE_LOG, `${line}\n`);

const readOnly = { readOnlyHint: true, destructiveHint: false, openWorldHint: false };
const object = (properties = {}, required = []) => ({ type: "object", properties, required });
const LONG_NAME = `a_really_long_tool_name_${"x".repeat(50)}`;

const tools = [
  { name: "files.read", description: "Read a file (dotted name)", inputSchema: object({ path: { type: "string" } }, ["path"]), annotations: readOnly },
  { name: "files_read", description: "Read a file (valid name)", inputSchema: object(), annotations: readOnly },
  { name: "名前", description: "A tool named in Japanese", inputSchema: object(), annotations: readOnly },
  { name: LONG_NAME, description: "A tool with a name over 64 characters", inputSchema: object(), annotations: readOnly },
  { name: "fails", description: "Always reports an error", inputSchema: object(), annotations: readOnly },
  { name: "bare", description: "", title: "Bare tool", inputSchema: object({ n: { type: "integer", minimum: 1 } }, ["n"]) },
  { name: "slow", description: "Waits, or stops when cancelled", inputSchema: object({ ms: { type: "number" } }, ["ms"]), annotations: readOnly },
  { name: "mixed", description: "Returns every kind of content", inputSchema: object(), annotations: readOnly },
  { name: "empty", description: "Returns only structured content", inputSchema: object(), annotations: readOnly },
  {
    name: "wipe",
    description: "Destroys things in the outside world",
    inputSchema: { $schema: "https://json-schema.org/draft/2020-12/schema", type: "object", properties: { target: { type: "string" } } },
    annotations: { readOnlyHint: false, destructiveHint: true, openWorldHint: true },
  },
];

const server = new Server({ name: "jianmu-fixture", version: "1.0.0" }, { capabilities: { tools: {} } });

server.setRequestHandler(ListToolsRequestSchema, async (request) => {
  const start = Number(request.params?.cursor ?? "0");
  const page = tools.slice(start, start + pageSize);
  const next = start + pageSize;
  return next < tools.length ? { tools: page, nextCursor: String(next) } : { tools: page };
});

const PNG = Buffer.alloc(300, 1).toString("base64");
const WAV = Buffer.alloc(2048, 2).toString("base64");

server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
  const { name, arguments: args = {} } = request.params;
  log(`call ${name} ${JSON.stringify(args)}`);
  switch (name) {
    case "files.read":
      return { content: [{ type: "text", text: `contents of ${args.path}` }] };
    case "files_read":
    case "名前":
    case LONG_NAME:
      return { content: [{ type: "text", text: `called ${name}` }] };
    case "fails":
      return { isError: true, content: [{ type: "text", text: "disk is full" }] };
    case "bare":
      return { content: [{ type: "text", text: `n=${args.n}` }] };
    case "slow":
      return await new Promise((resolve) => {
        const timer = setTimeout(() => resolve({ content: [{ type: "text", text: "slept" }] }), args.ms);
        extra.signal.addEventListener("abort", () => {
          clearTimeout(timer);
          log("cancelled slow");
          resolve({ content: [{ type: "text", text: "cancelled" }] });
        });
      });
    case "mixed":
      return {
        content: [
          { type: "text", text: "Here is everything:" },
          { type: "image", data: PNG, mimeType: "image/png" },
          { type: "audio", data: WAV, mimeType: "audio/wav" },
          { type: "resource", resource: { uri: "test://text/1", mimeType: "text/plain", text: "hello world" } },
          { type: "resource", resource: { uri: "test://blob/1", mimeType: "application/octet-stream", blob: PNG } },
          { type: "resource_link", uri: "test://link/1", name: "Report", mimeType: "application/pdf", description: "the yearly report" },
        ],
      };
    case "empty":
      return { content: [], structuredContent: { answer: 42 } };
    case "wipe":
      return { content: [{ type: "text", text: `wiped ${args.target ?? "nothing"}` }] };
    default:
      return { isError: true, content: [{ type: "text", text: `unknown tool ${name}` }] };
  }
});

/** FIXTURE_LINGER=1: ignore SIGTERM and stdin closing, so only SIGKILL ends the process. */
if (env.FIXTURE_LINGER === "1") {
  process.on("SIGTERM", () => log("ignored SIGTERM"));
  setInterval(() => undefined, 1000);
}

await server.connect(new StdioServerTransport());
log(`started ${process.pid}`);
