/**
 * What a recording's header says it is. Kept apart from the zod schemas of the lines
 * (`recording-format.ts`), so writing a recording does not build the schemas that reading one needs.
 */
export const RECORDING_FORMAT = "jianmu.recording";
export const RECORDING_VERSION = 1;
