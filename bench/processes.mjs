import { fork } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/* The bench's processes: the scripted server (one for the whole bench) and one client per scenario. */

const HERE = dirname(fileURLToPath(import.meta.url));

/**
 * A scenario that has not finished by then is stopped and reported as an error. Generous: on a
 * machine shared with other work the throughput scenario (~4000 runs per mode) can take minutes.
 */
const SCENARIO_TIMEOUT_MS = 600_000;

export const warningPattern = /\(node:\d+\) (\w*Warning: .*)/;

export function startServer(stderrLines) {
  const child = fork(join(HERE, "server.mjs"), [], { stdio: ["ignore", "inherit", "pipe", "ipc"] });
  child.stderr.setEncoding("utf8").on("data", (text) => stderrLines.push(...text.split("\n").filter(Boolean)));
  let nextId = 0;
  const pending = new Map();
  const ready = new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("exit", (code) => reject(new Error(`the bench server exited early (code ${code})`)));
    child.on("message", (message) => {
      if (message.ready) return resolve();
      pending.get(message.id)?.(message);
      pending.delete(message.id);
    });
  });
  const call = (cmd) =>
    new Promise((resolve, reject) => {
      const id = nextId++;
      pending.set(id, (message) => (message.error ? reject(new Error(message.error)) : resolve(message)));
      child.send({ id, cmd });
    });
  return {
    ready,
    async restart() {
      return (await call("restart")).baseURL;
    },
    async stop() {
      await call("stop").catch(() => undefined);
      if (child.exitCode === null) child.kill();
    },
  };
}

export function runClient(job, stderrLines, { execArgv = ["--expose-gc"] } = {}) {
  return new Promise((resolve) => {
    const child = fork(join(HERE, "client.mjs"), [JSON.stringify(job)], {
      execArgv,
      stdio: ["ignore", "inherit", "pipe", "ipc"],
    });
    child.stderr.setEncoding("utf8").on("data", (text) => stderrLines.push(...text.split("\n").filter(Boolean)));
    let answer;
    const timer = setTimeout(() => {
      answer = { error: `scenario ${job.scenario} did not finish within ${SCENARIO_TIMEOUT_MS / 1000} s`, warnings: [] };
      child.kill();
    }, SCENARIO_TIMEOUT_MS);
    child.on("message", (message) => (answer ??= message));
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve(answer ?? { error: `scenario ${job.scenario} exited with code ${code} without a result`, warnings: [] });
    });
  });
}

