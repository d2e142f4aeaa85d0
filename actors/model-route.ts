import { z } from "zod";

/**
 * Which of a model client's targets answered a call: the primary (`fallback: 0`) or its n-th
 * fallback, with the endpoint and model it stood for then. A run keeps the last one (in
 * `loop.modelRoute`, so it survives a restore) and hands it to the next call: with sticky
 * fallbacks (the default) that call starts where the last one succeeded instead of at the failing
 * primary. The endpoint and model guard against a configuration changed since: a route whose
 * fallback no longer stands for them is ignored.
 */
export const ModelRouteSchema = z.object({
  fallback: z.number().int().min(0),
  endpoint: z.string().min(1),
  model: z.string().min(1),
});
export type ModelRoute = z.infer<typeof ModelRouteSchema>;
