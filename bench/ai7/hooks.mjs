/** Module resolution hooks (register.mjs): AI SDK 7 and its OpenAI provider under their usual names. */
export async function resolve(specifier, context, next) {
  if (specifier === "ai") return next("ai-v7", context);
  if (specifier.startsWith("ai/")) return next(`ai-v7/${specifier.slice(3)}`, context);
  if (specifier === "@ai-sdk/openai") return next("ai-sdk-openai-v4", context);
  return next(specifier, context);
}
