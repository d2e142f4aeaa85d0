/** The only function names the model API (OpenAI and most compatible servers) accepts. */
const MAX_NAME = 64;
const VALID = /^[a-zA-Z0-9_-]{1,64}$/;

export interface NamedTool {
  /** The name the model sees (prefixed, sanitized, unique within the server). */
  name: string;
  /** The name the server knows the tool by, used for `tools/call`. */
  mcpName: string;
}

/** Replace every character the model API rejects with '_' (MCP allows dots, slashes, any Unicode). */
export function sanitizeToolName(raw: string): string {
  const cleaned = raw.replace(/[^a-zA-Z0-9_-]/g, "_");
  return cleaned === "" ? "tool" : cleaned;
}

/**
 * Give every server tool a model-safe name: `${prefix}${name}`, with characters outside
 * [a-zA-Z0-9_-] replaced by '_' and cut to 64 characters. Names that were already valid are
 * placed first, so a sanitized name never takes a real tool's name; any remaining clash gets a
 * numeric suffix (`_2`, `_3`, ...). The result keeps the input order.
 */
export function assignToolNames(mcpNames: readonly string[], prefix = ""): NamedTool[] {
  const taken = new Set<string>();
  const assigned = new Map<number, string>();
  const wanted = mcpNames.map((mcpName) => `${prefix}${mcpName}`);
  wanted.forEach((name, index) => {
    if (VALID.test(name) && !taken.has(name)) {
      taken.add(name);
      assigned.set(index, name);
    }
  });
  wanted.forEach((name, index) => {
    if (assigned.has(index)) return;
    const base = sanitizeToolName(name).slice(0, MAX_NAME);
    let candidate = base;
    for (let n = 2; taken.has(candidate); n++) {
      const suffix = `_${n}`;
      candidate = `${base.slice(0, MAX_NAME - suffix.length)}${suffix}`;
    }
    taken.add(candidate);
    assigned.set(index, candidate);
  });
  return mcpNames.map((mcpName, index) => ({ name: assigned.get(index)!, mcpName }));
}
