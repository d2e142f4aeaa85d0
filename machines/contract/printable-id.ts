import { z } from "zod";

/** A run's or a thread's id: printable, as it appears in SQL parameters, file names and URLs. Zod only (the web protocol shares it). */
export const PrintableIdSchema = z
  .string()
  .min(1, "must not be empty")
  .max(200, "must be at most 200 characters")
  .regex(/^[\w.:@-]+$/, "may only hold letters, digits and . _ - : @");
