import { describe, expect, it } from "vitest";
// @ts-expect-error: a plain .mjs module of the bench, without types.
import { interleaved } from "../../bench/measure.mjs";

const order = interleaved as (rep: number, names: readonly string[]) => string[];

describe("bench/measure.mjs interleaved: the order contenders take turns in", () => {
  for (const n of [2, 3, 4, 5, 6]) {
    it(`${n} names: over a cycle, each runs in every position and right after every other equally often`, () => {
      const names = Array.from({ length: n }, (_, i) => `c${i}`);
      const cycle = n % 2 === 0 ? n : 2 * n;
      const positions = new Map<string, number>();
      const follows = new Map<string, number>();
      for (let rep = 0; rep < cycle; rep++) {
        const turn = order(rep, names);
        expect([...turn].sort()).toEqual(names);
        turn.forEach((name, position) => positions.set(`${name}@${position}`, (positions.get(`${name}@${position}`) ?? 0) + 1));
        for (let i = 1; i < n; i++) follows.set(`${turn[i - 1]}→${turn[i]}`, (follows.get(`${turn[i - 1]}→${turn[i]}`) ?? 0) + 1);
      }
      expect(positions.size).toBe(n * n);
      expect(new Set(positions.values())).toEqual(new Set([cycle / n]));
      expect(follows.size).toBe(n * (n - 1));
      expect(new Set(follows.values())).toEqual(new Set([cycle / n]));
    });
  }
});
