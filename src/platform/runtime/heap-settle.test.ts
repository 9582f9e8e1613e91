import type { EventLoopUtilization } from 'node:perf_hooks';
import { getHeapSpaceStatistics } from 'node:v8';
import { describe, expect, it } from 'vitest';
import { compactHeap, markAllocationWindow, settleHeapWhenQuiet, type HeapSettled } from './heap-settle.js';

/** A timer driven by hand: `fire()` runs what is due, so no test waits for real time. */
function manualTimer() {
  const queue: { run: () => void; ms: number; cancelled: boolean }[] = [];
  return {
    schedule: (run: () => void, ms: number) => {
      const entry = { run, ms, cancelled: false };
      queue.push(entry);
      return { cancel: () => void (entry.cancelled = true) };
    },
    fire() {
      const entry = queue.shift();
      if (entry && !entry.cancelled) entry.run();
      return entry;
    },
    pending: () => queue.filter((e) => !e.cancelled).length,
  };
}

/** Event-loop utilization answering the given figures in turn, one per measured window. */
function loopBusy(...windows: number[]) {
  const elu = (utilization: number): EventLoopUtilization => ({ idle: 0, active: 0, utilization });
  return (previous?: EventLoopUtilization) => (previous ? elu(windows.shift() ?? 0) : elu(0));
}

const settled: HeapSettled = { heapTotalBefore: 2, heapTotalAfter: 1, heapUsedBefore: 2, heapUsedAfter: 1 };

describe('compactHeap', () => {
  it('collects garbage made after the start and never exposes gc to the main context', () => {
    const garbage: { rows: unknown[] | null } = { rows: Array.from({ length: 200_000 }, (_, i) => ({ i, text: `row ${i}` })) };
    const held = process.memoryUsage().heapUsed;
    garbage.rows = null;
    const result = compactHeap();
    expect(result.heapUsedAfter).toBeLessThan(held);
    expect(result.heapUsedAfter).toBeLessThan(result.heapUsedBefore);
    expect(result.heapTotalAfter).toBeLessThanOrEqual(result.heapTotalBefore);
    expect((globalThis as { gc?: unknown }).gc).toBeUndefined();
    expect(compactHeap().heapUsedAfter).toBeGreaterThan(0); // a second call reuses the same collector
  });
});

describe('markAllocationWindow', () => {
  it('runs a young-generation collection: the garbage in it goes', () => {
    const youngUsed = () => getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')!.space_used_size;
    const garbage: { rows: unknown[] | null } = { rows: Array.from({ length: 2000 }, (_, i) => ({ i, text: `garbage ${i}` })) };
    expect(garbage.rows).toHaveLength(2000);
    garbage.rows = null;
    const before = youngUsed();
    markAllocationWindow();
    expect(youngUsed()).toBeLessThan(before);
    expect((globalThis as { gc?: unknown }).gc).toBeUndefined();
  });
});

describe('settleHeapWhenQuiet', () => {
  it('marks the window, compacts after the first quiet one, and marks once more a window later', () => {
    const timer = manualTimer();
    const steps: string[] = [];
    const compacted: HeapSettled[] = [];
    settleHeapWhenQuiet({
      quietMs: 6000,
      utilization: loopBusy(0.05),
      schedule: timer.schedule,
      compact: () => (steps.push('compact'), settled),
      markWindow: () => steps.push('mark'),
      onSettled: (s) => compacted.push(s),
    });
    expect(steps).toEqual(['mark']);
    expect(timer.fire()?.ms).toBe(6000);
    expect(steps).toEqual(['mark', 'compact']);
    expect(compacted).toEqual([settled]);
    expect(timer.fire()?.ms).toBe(6000);
    expect(steps).toEqual(['mark', 'compact', 'mark']);
    expect(timer.pending()).toBe(0);
  });

  it('waits while the service is busy, and gives up after its attempts', () => {
    const timer = manualTimer();
    let compactions = 0;
    let marks = 0;
    settleHeapWhenQuiet({
      attempts: 3,
      busyAbove: 0.2,
      utilization: loopBusy(0.9, 0.5, 0.7),
      schedule: timer.schedule,
      compact: () => (compactions++, settled),
      markWindow: () => marks++,
    });
    for (let i = 0; i < 3; i++) timer.fire();
    expect(compactions).toBe(0);
    expect(marks).toBe(3); // the start and each window retried
    expect(timer.pending()).toBe(0);
  });

  it('compacts in a later window once the load stops', () => {
    const timer = manualTimer();
    let compactions = 0;
    settleHeapWhenQuiet({ utilization: loopBusy(0.8, 0.1), schedule: timer.schedule, compact: () => (compactions++, settled), markWindow: () => {} });
    timer.fire();
    expect(compactions).toBe(0);
    timer.fire();
    expect(compactions).toBe(1);
  });

  it('does nothing once cancelled (shutdown)', () => {
    const timer = manualTimer();
    let compactions = 0;
    const settle = settleHeapWhenQuiet({ utilization: loopBusy(0), schedule: timer.schedule, compact: () => (compactions++, settled), markWindow: () => {} });
    settle.cancel();
    timer.fire();
    expect(compactions).toBe(0);
    expect(timer.pending()).toBe(0);
  });
});
