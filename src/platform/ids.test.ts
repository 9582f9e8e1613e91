import { randomBytes } from 'node:crypto';
import { v7 } from 'uuid';
import { describe, expect, it } from 'vitest';
import { formatV7, newId } from './ids.js';

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('newId', () => {
  it('makes distinct UUIDv7 ids in creation order, across refills of its random pool', () => {
    const ids = Array.from({ length: 2_000 }, () => newId());
    for (const id of ids) expect(id).toMatch(UUID_V7);
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
  });

  it('carries the creation time in its first 48 bits', () => {
    const before = Date.now();
    const ms = parseInt(newId().replace(/-/g, '').slice(0, 12), 16);
    expect(ms).toBeGreaterThanOrEqual(before);
    expect(ms).toBeLessThanOrEqual(Date.now() + 1);
  });

  it("writes exactly uuid's v7 for the same random bytes, time and sequence", () => {
    const cases: [number, number][] = [
      [0, 0],
      [1_795_000_000_000, 0],
      [1_795_000_000_123, 0x7fffffff],
      [2 ** 48 - 1, 0x12345678],
      [Date.now(), 1],
    ];
    for (const [msecs, seq] of cases) {
      for (let round = 0; round < 50; round++) {
        const random = randomBytes(48);
        const from = 16 * (round % 3);
        expect(formatV7(random, from, msecs, seq)).toBe(v7({ random: random.subarray(from, from + 16), msecs, seq }));
      }
    }
  });
});
