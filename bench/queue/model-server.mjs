// The instant model (model.mjs) in a process of its own, as a real model is: forked by run.mjs for the
// throughput rows, so that answering a model call costs every contender the same (a request to another
// process), and none of it counts against the process that runs runAgent in process. Sends { baseURL }
// over IPC once listening; exits when the parent disconnects.
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { scriptedModel } from "./model.mjs";

const { startOpenAIServer, replies } = await import(pathToFileURL(join(process.argv[2], "testing.js")).href);
const server = await startOpenAIServer({ respond: scriptedModel(replies) });
process.send({ baseURL: server.baseURL });
process.on("disconnect", () => void server.close().then(() => process.exit(0)));
