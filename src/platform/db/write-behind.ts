/**
 * A write-behind buffer: values are merged by key in memory and written together at most once per `delayMs`, so a row
 * every request touches (an account's spend, a key's last use) is written once a period instead of once a request.
 * Batches are written one after another, never two at once. `flush()` writes what is pending now and resolves when
 * every batch so far is written (a read that must see them, shutdown). `write` handles its own failures: it may `add`
 * a failed part back to go with the next batch.
 */
export interface WriteBehind<V> {
  add(key: string, value: V): void;
  flush(): Promise<void>;
}

export function writeBehind<V>(options: {
  delayMs: number;
  merge: (pending: V, value: V) => V;
  write: (batch: [string, V][]) => Promise<void>;
}): WriteBehind<V> {
  const pending = new Map<string, V>();
  let timer: NodeJS.Timeout | null = null;
  let writing: Promise<void> = Promise.resolve();

  function flush(): Promise<void> {
    if (timer) clearTimeout(timer);
    timer = null;
    if (pending.size === 0) return writing;
    const batch = [...pending];
    pending.clear();
    // `write` reports its own failures; one that slipped through must not stop the batches after it.
    writing = writing.then(() => options.write(batch)).catch(() => undefined);
    return writing;
  }

  return {
    add(key, value) {
      const previous = pending.get(key);
      pending.set(key, previous === undefined ? value : options.merge(previous, value));
      if (!timer) {
        timer = setTimeout(() => void flush(), options.delayMs);
        timer.unref();
      }
    },
    flush,
  };
}
