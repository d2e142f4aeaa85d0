// Module hooks for a child process: every resolved module URL is appended to $JIANMU_LOAD_LOG,
// so a test can see exactly which packages an import loaded.
import { appendFileSync } from "node:fs";

export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  if (process.env.JIANMU_LOAD_LOG) appendFileSync(process.env.JIANMU_LOAD_LOG, `${result.url}\n`);
  return result;
}
