import { SCENARIOS } from "./scenarios.mjs";

/*
 * One client process: runs the scenario named in argv[2] (a JSON job) and sends its result to the
 * parent over IPC. Process warnings (MaxListenersExceededWarning and the like) are collected and
 * sent with the result; run.mjs also keeps this process's stderr.
 */

const warnings = [];
process.on("warning", (warning) => warnings.push(`${warning.name}: ${warning.message}`));

const job = JSON.parse(process.argv[2] ?? "{}");
const scenario = SCENARIOS[job.scenario];

async function main() {
  if (!scenario) throw new Error(`unknown scenario ${JSON.stringify(job.scenario)}; known: ${Object.keys(SCENARIOS).join(", ")}`);
  const result = await scenario(job);
  // Warnings are emitted on the next tick; let them arrive before reporting.
  await new Promise((resolve) => setImmediate(resolve));
  return result;
}

main().then(
  (result) => process.send({ result, warnings }, () => process.exit(0)),
  (error) => process.send({ error: String(error?.stack ?? error), warnings }, () => process.exit(1)),
);
