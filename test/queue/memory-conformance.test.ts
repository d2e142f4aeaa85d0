import { MemoryRunStore } from "../../queue/memory-store.js";
import { describeRunStoreConformance } from "./conformance.js";

describeRunStoreConformance("memory", async (options = {}) => new MemoryRunStore({ pollMs: 50, ...options }), { finishAndClaim: false });
