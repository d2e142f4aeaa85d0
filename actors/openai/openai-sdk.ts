import { ModelError } from "../model-client.js";

/**
 * The `openai` SDK, loaded on the first model call instead of on `import "jianmu"`: it is ~150
 * modules and the largest part of jianmu's start-up (bench/import.mjs), and an app that only
 * builds machines, reads recordings or runs a scripted model never needs it. One dynamic import,
 * cached; afterwards `loadedOpenAI()` hands the module over synchronously, so calls after the
 * first cost nothing extra.
 */
export type OpenAISdk = typeof import("openai");

let sdk: OpenAISdk | undefined;
let loading: Promise<OpenAISdk> | undefined;

/** The SDK module once `loadOpenAI()` has settled, else undefined. */
export function loadedOpenAI(): OpenAISdk | undefined {
  return sdk;
}

/**
 * Loads the SDK (once per process). A failure (the peer missing or broken) is a `ModelError` of
 * kind `config` naming the fix; the next call tries again.
 */
export function loadOpenAI(): Promise<OpenAISdk> {
  loading ??= import("openai").then(
    (module) => (sdk = module),
    (error: unknown) => {
      loading = undefined;
      const reason = error instanceof Error ? error.message : String(error);
      throw new ModelError(`model call: the openai package cannot be loaded (${reason}): run \`npm install openai\``, { kind: "config", cause: error });
    },
  );
  return loading;
}
