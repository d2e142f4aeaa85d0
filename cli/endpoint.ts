import { CONFIG_FILE, type JianmuFile } from "../machines/contract/config.js";

/** Where the CLI's model calls go: a configured endpoint, or the offline replay of a recording. */
export type Endpoint = { kind: "configured"; baseURL?: string; apiKey?: string; baseURLSource?: string } | { kind: "offline" };

/**
 * A model endpoint counts as configured when a key or a base URL is given anywhere: flags, then
 * the environment, then jianmu.yaml. With none, the CLI goes offline (replayed recordings).
 */
export function resolveEndpoint(flags: { baseURL?: string }, env: Record<string, string | undefined>, file: JianmuFile | undefined): Endpoint {
  const keyVar = file?.apiKeyEnv ?? "OPENAI_API_KEY";
  const apiKey = env[keyVar] || undefined;
  const sources: [string, string | undefined][] = [
    ["--base-url", flags.baseURL],
    ["OPENAI_BASE_URL", env["OPENAI_BASE_URL"] || undefined],
    [`${CONFIG_FILE.pathOf("baseURL")} in jianmu.yaml`, file?.baseURL],
  ];
  const [baseURLSource, baseURL] = sources.find(([, value]) => value !== undefined) ?? [];
  if (apiKey === undefined && baseURL === undefined) return { kind: "offline" };
  return { kind: "configured", ...(baseURL !== undefined ? { baseURL, baseURLSource: baseURLSource! } : {}), ...(apiKey !== undefined ? { apiKey } : {}) };
}
