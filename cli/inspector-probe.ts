import { connect } from "node:net";

/** Whether something listens at a ws:// URL's host and port, so --inspect can say which case it is. */
export function isListening(url: string, timeoutMs = 500): Promise<boolean> {
  const { hostname, port, protocol } = new URL(url);
  const host = hostname === "localhost" ? "127.0.0.1" : hostname.replace(/^\[|\]$/g, "");
  return new Promise((resolve) => {
    const socket = connect({ host, port: Number(port || (protocol === "wss:" ? 443 : 80)) });
    const done = (listening: boolean) => {
      socket.destroy();
      resolve(listening);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
  });
}
