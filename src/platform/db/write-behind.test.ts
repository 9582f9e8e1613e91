import { afterEach, describe, expect, it, vi } from 'vitest';
import { writeBehind } from './write-behind.js';

afterEach(() => {
  vi.useRealTimers();
});

const sum = (pending: number, value: number) => pending + value;

describe('writeBehind', () => {
  it('merges values by key and writes them together once the delay has passed', async () => {
    vi.useFakeTimers();
    const batches: [string, number][][] = [];
    const buffer = writeBehind<number>({ delayMs: 1000, merge: sum, write: async (batch) => void batches.push(batch) });
    buffer.add('a', 1);
    buffer.add('b', 5);
    buffer.add('a', 2);
    await vi.advanceTimersByTimeAsync(999);
    expect(batches).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(batches).toEqual([
      [
        ['a', 3],
        ['b', 5],
      ],
    ]);
    buffer.add('a', 4);
    await vi.advanceTimersByTimeAsync(1000);
    expect(batches).toHaveLength(2);
    expect(batches[1]).toEqual([['a', 4]]);
  });

  it('flush writes what is pending at once and resolves when it is written; with nothing pending it writes nothing', async () => {
    const batches: [string, number][][] = [];
    const buffer = writeBehind<number>({ delayMs: 3_600_000, merge: sum, write: async (batch) => void batches.push(batch) });
    await buffer.flush();
    expect(batches).toEqual([]);
    buffer.add('a', 1);
    await buffer.flush();
    expect(batches).toEqual([[['a', 1]]]);
  });

  it('writes one batch at a time, in order, and goes on after a write that failed (which may add its part back)', async () => {
    const written: string[] = [];
    let running = 0;
    let overlapped = false;
    let failOnce = true;
    const buffer = writeBehind<number>({
      delayMs: 3_600_000,
      merge: sum,
      async write(batch) {
        running++;
        overlapped ||= running > 1;
        await new Promise((resolve) => setImmediate(resolve));
        running--;
        if (failOnce) {
          failOnce = false;
          for (const [key, value] of batch) buffer.add(key, value);
          throw new Error('the database is away');
        }
        written.push(...batch.map(([key, value]) => `${key}=${value}`));
      },
    });
    buffer.add('a', 1);
    const first = buffer.flush();
    buffer.add('b', 2);
    const second = buffer.flush();
    await Promise.all([first, second]);
    expect(overlapped).toBe(false);
    expect(written).toEqual(['b=2']);
    // the failed batch was added back and goes with the next one
    await buffer.flush();
    expect(written).toEqual(['b=2', 'a=1']);
  });
});
