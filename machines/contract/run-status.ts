import { z } from "zod";

/**
 * Where a saved run stands: kept in every checkpoint's envelope (machines/persistence/persistence.ts) and sent
 * to web clients (web/protocol.ts). Its own file, zod only, so the browser-safe protocol can share it.
 */
export const RunStatusSchema = z.enum(["running", "awaitingApproval", "succeeded", "failed"]);
export type RunStatus = z.infer<typeof RunStatusSchema>;
