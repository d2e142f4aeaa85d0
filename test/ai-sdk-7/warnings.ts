import type { Warning } from "ai";

/**
 * Every warning AI SDK 7 logs while a test runs, through its own `AI_SDK_LOG_WARNINGS` hook (its
 * default logger reports each deprecation once per process, which a test cannot see).
 */
export function capturedWarnings(): { list: Warning[]; stop(): void } {
  const list: Warning[] = [];
  const before = globalThis.AI_SDK_LOG_WARNINGS;
  globalThis.AI_SDK_LOG_WARNINGS = ({ warnings }) => void list.push(...warnings);
  return {
    list,
    stop: () => {
      globalThis.AI_SDK_LOG_WARNINGS = before;
    },
  };
}
