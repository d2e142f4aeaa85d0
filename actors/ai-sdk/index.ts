export { fromAiSdk, FromAiSdkOptionsSchema, type FromAiSdkOptions, type AiSdkLanguageModel } from "./ai-sdk-model-client.js";
