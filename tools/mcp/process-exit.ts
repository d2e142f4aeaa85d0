/** How often to look whether the process has ended, and for how long before escalating. */
const POLL_MS = 20;
const GRACE_MS = 1000;

/** True while a process with this pid exists (signal 0 checks without sending anything). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // ESRCH: no such process. EPERM: the pid now belongs to someone else's process, so ours is gone.
    return (error as NodeJS.ErrnoException).code !== "ESRCH" && (error as NodeJS.ErrnoException).code !== "EPERM";
  }
}

async function waitUntilGone(pid: number, ms: number): Promise<boolean> {
  for (let waited = 0; waited < ms; waited += POLL_MS) {
    if (!processAlive(pid)) return true;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  return !processAlive(pid);
}

/**
 * Make sure a server process has ended. The SDK's close already asked it (stdin closed, then
 * SIGTERM, then SIGKILL without waiting); this waits for it to go and kills it if it lingers.
 */
export async function processGone(pid: number): Promise<void> {
  if (await waitUntilGone(pid, GRACE_MS)) return;
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    // It ended between the check and the kill.
  }
  if (await waitUntilGone(pid, GRACE_MS)) return;
  throw new Error(`the server process (pid ${pid}) is still running after SIGKILL`);
}
