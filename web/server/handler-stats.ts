import type { RunRegistry } from "./run-registry.js";
import type { StoreFollowers } from "./store-follow.js";
import type { EventFeed } from "./stream-response.js";

/** What one handler holds open for its streams right now: for tests and metrics, never for behaviour. */
export interface HandlerStats {
  /** Streams following a run (each with its heartbeat timer). */
  streams: number;
  /** Listeners on the logs of runs held in this process (without a run store). */
  logFollowers: number;
  /** With a run store: runs being read for followers, the followers, and whether the shared poll timer and store subscription are on. */
  followedRuns: number;
  storeFollowers: number;
  storeListening: boolean;
}

const statsOf = new WeakMap<object, () => HandlerStats>();

/** The counts of a handler made by `agentHandler` (undefined for anything else). */
export function handlerStats(handler: object): HandlerStats | undefined {
  return statsOf.get(handler)?.();
}

/** Count a handler's streams (`streams`), the log listeners of its runs and its store followers (with a run store). */
export function registerHandlerStats(handler: object, streams: StreamCount, runs: RunRegistry, followers: StoreFollowers | undefined): void {
  statsOf.set(handler, () => ({
    streams: streams.open,
    logFollowers: runs.followers(),
    followedRuns: followers?.runs ?? 0,
    storeFollowers: followers?.followers ?? 0,
    storeListening: followers?.listening ?? false,
  }));
}

/** Counts the streams following a feed: one from `follow` until it is unfollowed or the feed closes it, whichever comes first. */
export class StreamCount {
  open = 0;

  counted(feed: EventFeed): EventFeed {
    return {
      follow: (listener, onClose) => {
        let counted = true;
        this.open++;
        const done = () => {
          if (!counted) return;
          counted = false;
          this.open--;
        };
        const unfollow = feed.follow(listener, () => {
          done();
          onClose();
        });
        return () => {
          done();
          unfollow();
        };
      },
    };
  }
}
