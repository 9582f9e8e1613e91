import { performance, type EventLoopUtilization } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** What one compaction gave, in bytes of V8 heap reserved (heapTotal) and in use. */
export interface HeapSettled {
  heapTotalBefore: number;
  heapTotalAfter: number;
  heapUsedBefore: number;
  heapUsedAfter: number;
}

let collect: (() => void) | null = null;

/**
 * One full collection that also compacts the old generation, so its emptied pages go back to the system. V8 only
 * compacts on its own under allocation pressure, which an idle service never makes: without this, the ~20 MB of
 * start-up garbage (migrations, seeds, route compilation) stays resident. `gc` is taken from a fresh context (the
 * main one never gets it) and the compaction flag is on for this one collection only.
 */
export function compactHeap(): HeapSettled {
  if (!collect) {
    setFlagsFromString('--expose-gc');
    collect = runInNewContext('gc') as () => void;
    setFlagsFromString('--no-expose-gc');
  }
  const before = process.memoryUsage();
  setFlagsFromString('--compact-on-every-full-gc');
  try {
    collect();
  } finally {
    setFlagsFromString('--no-compact-on-every-full-gc');
  }
  const after = process.memoryUsage();
  return { heapTotalBefore: before.heapTotal, heapTotalAfter: after.heapTotal, heapUsedBefore: before.heapUsed, heapUsedAfter: after.heapUsed };
}

export interface HeapSettleOptions {
  /** How long the service must have been up before the collection (ms). */
  quietMs?: number;
  /** Above this event-loop utilization over the last `quietMs` the service is busy: try again later. */
  busyAbove?: number;
  /** How many windows to wait for a quiet one; a service busy from the start never needs this (V8 collects it). */
  attempts?: number;
  onSettled?: (settled: HeapSettled) => void;
  /** Injected in tests: the event loop's utilization since `previous`, and the timer. */
  utilization?: (previous?: EventLoopUtilization) => EventLoopUtilization;
  schedule?: (run: () => void, ms: number) => { cancel(): void };
  compact?: () => HeapSettled;
}

const unrefTimer = (run: () => void, ms: number) => {
  const timer = setTimeout(run, ms);
  timer.unref();
  return { cancel: () => clearTimeout(timer) };
};

/**
 * After the start, once the event loop has been quiet for a window, compacts the heap once (`compactHeap`). A busy
 * window postpones it; after `attempts` busy windows it gives up, since a loaded service's heap is collected by V8
 * itself. Answers a cancel for shutdown.
 */
export function settleHeapWhenQuiet(options: HeapSettleOptions = {}): { cancel(): void } {
  const { quietMs = 5_000, busyAbove = 0.2, attempts = 6, onSettled, utilization = performance.eventLoopUtilization, schedule = unrefTimer, compact = compactHeap } = options;
  let window = utilization();
  let left = attempts;
  let pending = schedule(check, quietMs);
  function check() {
    const used = utilization(window);
    window = utilization();
    if (used.utilization <= busyAbove) {
      const settled = compact();
      onSettled?.(settled);
      return;
    }
    if (--left > 0) pending = schedule(check, quietMs);
  }
  return { cancel: () => pending.cancel() };
}
