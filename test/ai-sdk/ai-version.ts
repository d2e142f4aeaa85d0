import aiPackage from "ai/package.json" with { type: "json" };

/**
 * The major of the `ai` package these tests run on: 6 in the "jianmu" project, 7 in "ai-sdk-7"
 * (vitest.config.ts), where the few things AI SDK 7 itself does differently are expected so.
 */
export const aiMajor = Number(aiPackage.version.split(".")[0]);
