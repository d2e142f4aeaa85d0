import type { ViewArgs } from "./args.js";
import type { Terminal } from "./progress.js";

export async function viewCommand(_args: ViewArgs, ctx: Terminal & { cwd: string }): Promise<number> {
  ctx.err.write("jianmu view: not available yet\n");
  return 2;
}
