/**
 * A value built on its first use and kept. For zod schemas that only some calls need (restoring a
 * snapshot, reading a server's reply): a zod schema is a few kilobytes of objects and closures, and
 * building them all at module load made `import "jianmu"` slower and heavier (bench/import.mjs).
 */
export function builtOnce<T>(build: () => T): () => T {
  let value: T | undefined;
  let built = false;
  return () => {
    if (!built) {
      value = build();
      built = true;
    }
    return value as T;
  };
}
