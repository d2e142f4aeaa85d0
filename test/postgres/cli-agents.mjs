// The --agents module of the CLI test: `jianmu worker --agents test/postgres/cli-agents.mjs`.
// It exports agents({ store }) so that the machines journal their tool calls in the worker's store.
import { makeAgents } from "../queue/fixture-agents.mjs";
import * as jianmu from "../../dist/index.js";

export function agents({ store }) {
  return makeAgents(jianmu, { baseURL: process.env.SCRIPT_BASE_URL, journal: store, effect: () => undefined });
}
