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

type Collect = (options?: { type?: 'major' | 'minor' }) => void;
let collect: Collect | null = null;

/** V8's `gc`, taken from a fresh context (the main one never gets it). */
function collector(): Collect {
  if (!collect) {
    setFlagsFromString('--expose-gc');
    collect = runInNewContext('gc') as Collect;
    setFlagsFromString('--no-expose-gc');
  }
  return collect;
}

/**
 * One full collection that also compacts the old generation, so its emptied pages go back to the system. V8 only
 * compacts on its own under allocation pressure, which an idle service never makes: without this, the ~20 MB of
 * start-up garbage (migrations, seeds, route compilation) stays resident. The compaction flag is on for this one
 * collection only.
 */
export function compactHeap(): HeapSettled {
  const gc = collector();
  const before = process.memoryUsage();
  setFlagsFromString('--compact-on-every-full-gc');
  try {
    gc();
  } finally {
    setFlagsFromString('--no-compact-on-every-full-gc');
  }
  const after = process.memoryUsage();
  return { heapTotalBefore: before.heapTotal, heapTotalAfter: after.heapTotal, heapUsedBefore: before.heapUsed, heapUsedAfter: after.heapUsed };
}

/**
 * A young-generation collection (about a millisecond). V8 measures the allocation rate between collections and gives
 * its young generation back (up to 32 MB) only at a collection that ends 5 s of allocating under 1 MB/s; without a
 * collection at the start of the quiet window, the window would be measured together with the start-up's allocation.
 */
export function markAllocationWindow(): void {
  collector()({ type: 'minor' });
}

export interface HeapSettleOptions {
  /**
   * One window (ms): how long the service must have been up before the collection. Longer than V8's 5 s frame, so a
   * collection the start-up's last allocations cause just after the mark still leaves a whole frame before the next.
   */
  quietMs?: number;
  /** Above this event-loop utilization over the last `quietMs` the service is busy: try again later. */
  busyAbove?: number;
  /** How many windows to wait for a quiet one; a service busy from the start never needs this (V8 collects it). */
  attempts?: number;
  onSettled?: (settled: HeapSettled) => void;
  /** Injected in tests: the event loop's utilization since `previous`, the timer and the two collections. */
  utilization?: (previous?: EventLoopUtilization) => EventLoopUtilization;
  schedule?: (run: () => void, ms: number) => { cancel(): void };
  compact?: () => HeapSettled;
  markWindow?: () => void;
}

const unrefTimer = (run: () => void, ms: number) => {
  const timer = setTimeout(run, ms);
  timer.unref();
  return { cancel: () => clearTimeout(timer) };
};

/**
 * After the start, once the event loop has been quiet for a window, compacts the heap once (`compactHeap`). A busy
 * window postpones it; after `attempts` busy windows it gives up, since a loaded service's heap is collected by V8
 * itself. Each window starts with `markAllocationWindow`, so a quiet one also returns the young generation at the
 * compaction; one more mark a window after it returns it when the compaction's window allocated too much. Answers a
 * cancel for shutdown.
 */
export function settleHeapWhenQuiet(options: HeapSettleOptions = {}): { cancel(): void } {
  const {
    quietMs = 6_000,
    busyAbove = 0.2,
    attempts = 6,
    onSettled,
    utilization = performance.eventLoopUtilization,
    schedule = unrefTimer,
    compact = compactHeap,
    markWindow = markAllocationWindow,
  } = options;
  markWindow();
  let window = utilization();
  let left = attempts;
  let pending = schedule(check, quietMs);
  function check() {
    const used = utilization(window);
    window = utilization();
    if (used.utilization <= busyAbove) {
      const settled = compact();
      onSettled?.(settled);
      pending = schedule(markWindow, quietMs);
      return;
    }
    if (--left > 0) {
      markWindow();
      pending = schedule(check, quietMs);
    }
  }
  return { cancel: () => pending.cancel() };
}
