/**
 * The base of every error jianmu throws. Each class has a stable `errorCode` (on the class and on
 * each instance): match on it, not on the message (which explains the problem and may change) or
 * the class name (which a bundler may mangle). Named `errorCode`, not `code`, because some errors
 * already carry a `code` from elsewhere (a model server's error code on `ModelError`, the web
 * protocol's code on `HttpError`).
 */
export class JianmuError extends Error {
  static readonly errorCode: string = "JIANMU_ERROR";

  /** The class's stable code. A getter, so it never shows up in an error's serialized fields. */
  get errorCode(): string {
    return (this.constructor as typeof JianmuError).errorCode;
  }
}

/** Whether `error` is one of jianmu's, whatever realm or copy of the package threw it. */
export function isJianmuError(error: unknown): error is JianmuError {
  return error instanceof JianmuError;
}
