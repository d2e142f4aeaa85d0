import { register } from "node:module";

/*
 * `node --import ./bench/ai7/register.mjs ...`: the process resolves `ai` to AI SDK 7 (the `ai-v7`
 * devDependency, npm's alias of ai@7) and `@ai-sdk/openai` to the provider made for it (`ai-sdk-openai-v4`),
 * for every importer, jianmu's dist included: as in an app that installed ai@7 (vitest.config.ts's
 * "ai-sdk-7" project does the same for the tests).
 */
register("./hooks.mjs", import.meta.url);
