import { z } from "zod";
import type { DiffOp } from "./context-diff.js";

/** A recorded context diff (`context-diff.ts`), as read back from a recording. */
export const DiffOpSchema: z.ZodType<DiffOp> = z.discriminatedUnion("op", [
  z.object({ op: z.literal("set"), path: z.array(z.union([z.string(), z.number()])), value: z.unknown() }),
  z.object({ op: z.literal("push"), path: z.array(z.union([z.string(), z.number()])), items: z.array(z.unknown()) }),
  z.object({ op: z.literal("del"), path: z.array(z.union([z.string(), z.number()])) }),
]);
