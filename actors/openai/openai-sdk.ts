import { ModelError } from "../model-client.js";

/**
 * The `openai` SDK, and the code of ours that calls it (`call-path.ts`), loaded on the first model
 * call instead of on `import "jianmu"`: together ~170 modules and the largest part of jianmu's
 * start-up (bench/import.mjs), and an app that only builds machines, reads recordings or runs a
 * scripted model never needs them. One dynamic import, cached; afterwards `loadedCallPath()` hands
 * them over synchronously, so calls after the first cost nothing extra.
 */
export type OpenAISdk = typeof import("openai");
export type CallPath = typeof import("./call-path.js");

let sdk: OpenAISdk | undefined;
let callPath: CallPath | undefined;
let loading: Promise<CallPath> | undefined;

/** The SDK module once `loadCallPath()` has settled, else undefined. */
export function loadedOpenAI(): OpenAISdk | undefined {
  return sdk;
}

/** The call path once `loadCallPath()` has settled (the SDK with it), else undefined. */
export function loadedCallPath(): CallPath | undefined {
  return callPath;
}

/**
 * Loads the SDK and the call path (once per process). A failure (the peer missing or broken) is a
 * `ModelError` of kind `config` naming the fix; the next call tries again.
 */
export function loadCallPath(): Promise<CallPath> {
  loading ??= Promise.all([import("openai"), import("./call-path.js")]).then(
    ([sdkModule, pathModule]) => {
      sdk = sdkModule;
      return (callPath = pathModule);
    },
    (error: unknown) => {
      loading = undefined;
      const reason = error instanceof Error ? error.message : String(error);
      throw new ModelError(`model call: the openai package cannot be loaded (${reason}): run \`npm install openai\``, { kind: "config", cause: error });
    },
  );
  return loading;
}
