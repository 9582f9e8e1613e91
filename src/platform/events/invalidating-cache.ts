import type { DbOrTx } from '../db/database.js';
import type { EventBus } from './event-bus.js';
import { notifyInTransaction } from './notify-in-transaction.js';

export interface InvalidatingCacheOptions<V> {
  /** Unique per kind of entry; the NOTIFY channel is `cache_<name>`. */
  name: string;
  load: (key: string) => Promise<V>;
  /** Cross-instance invalidation; without it the cache only hears its own instance's changes. */
  bus?: EventBus;
  /**
   * Entries are reloaded after this long: a safety net for a notification missed other than by a listener reconnecting
   * (after which every entry is dropped at once).
   */
  ttlMs?: number;
  /** When a value stops being true by itself (a subscription's end): epoch milliseconds, or null for never. */
  expiresAt?: (value: V) => number | null;
  maxEntries?: number;
  now?: () => number;
  /**
   * For readers that `peek`: an entry that is dropped while kept (or loading) is loaded again at once, in the
   * background, rather than at its next read, so `peek` finds it again soon after a change or a reconnect.
   */
  reloadDropped?: boolean;
  /** Where a load no caller waits for (`peek`, `reloadDropped`) reports its failure; ignored by default. */
  onBackgroundError?: (err: unknown) => void;
}

export interface InvalidatingCache<V> {
  get(key: string): Promise<V>;
  /**
   * The value kept for `key` now, without waiting, or undefined: for a reader that may not wait for I/O (inside a
   * caller's transaction). A missing or expired entry starts the load `get` would, shared with it; an expired entry is
   * answered until that load stores (nothing invalidated it, it only outlived the safety net). A dropped entry is never
   * answered: after an invalidation `peek` answers undefined until a load that started after it stores.
   */
  peek(key: string): V | undefined;
  /**
   * The values of many keys: hits from the cache, every miss read by one call of `loadMany` (a key it leaves out is
   * neither returned nor kept). A miss's value is kept unless an invalidation came while it was read.
   */
  getMany(keys: readonly string[], loadMany: (missing: string[]) => Promise<Map<string, V>>): Promise<Map<string, V>>;
  /**
   * Announces that `key` changed: dropped here at once and, through NOTIFY, on every instance. Inside a transaction
   * the notification is delivered when it commits (and dropped on rollback), so no instance reloads before the
   * change is visible.
   */
  changed(key: string, tx?: DbOrTx): Promise<void>;
  /** Drops `key` here only (the change is announced to other instances some other way, e.g. by a trigger). */
  forget(key: string): void;
  /** Drops every entry here only. */
  forgetAll(): void;
  /** Drops every entry on every instance (a change that touches many keys). */
  changedAll(tx?: DbOrTx): Promise<void>;
  readonly size: number;
}

const ALL = '*';

/**
 * A read-through in-process cache whose entries every instance drops when the owner of the data announces a change.
 * A load that started before an invalidation never stores its (possibly stale) answer; concurrent misses of one key
 * share one load. When the bus reports a reconnect (changes may have been missed) every entry is dropped and every
 * load in flight is kept from storing, as for `forgetAll`.
 */
export function createInvalidatingCache<V>(options: InvalidatingCacheOptions<V>): InvalidatingCache<V> {
  const { name, load, bus } = options;
  const ttlMs = options.ttlMs ?? 60_000;
  const maxEntries = options.maxEntries ?? 20_000;
  const now = options.now ?? Date.now;
  const onBackgroundError = options.onBackgroundError ?? (() => undefined);
  const channel = `cache_${name}`;
  const entries = new Map<string, { value: V; until: number }>();
  const loading = new Map<string, Promise<V>>();
  let generation = 0;
  let subscription: Promise<unknown> | null = null;
  bus?.onReconnect(() => drop(ALL));

  function drop(key: string): void {
    generation++;
    const reload = options.reloadDropped ? heldKeys(key) : [];
    if (key === ALL) {
      entries.clear();
      loading.clear();
    } else {
      entries.delete(key);
      loading.delete(key);
    }
    for (const dropped of reload) get(dropped).catch(onBackgroundError);
  }

  function heldKeys(key: string): string[] {
    if (key === ALL) return [...new Set([...entries.keys(), ...loading.keys()])];
    return entries.has(key) || loading.has(key) ? [key] : [];
  }

  function subscribe(): Promise<unknown> {
    subscription ??= bus
      ? bus
          .subscribe(channel, (payload) => {
            if (typeof payload === 'string') drop(payload);
          })
          .catch((err: unknown) => {
            subscription = null; // retried on the next miss; the TTL bounds staleness meanwhile
            throw err;
          })
      : Promise.resolve();
    return subscription;
  }

  function keep(key: string, value: V): void {
    const expires = options.expiresAt?.(value) ?? null;
    const until = Math.min(now() + ttlMs, expires ?? Number.POSITIVE_INFINITY);
    if (entries.size >= maxEntries) entries.delete(entries.keys().next().value!);
    entries.set(key, { value, until });
  }

  async function fill(key: string): Promise<V> {
    const started = generation;
    await subscribe().catch(() => undefined);
    const value = await load(key);
    if (generation === started) keep(key, value);
    return value;
  }

  async function announce(key: string, tx?: DbOrTx): Promise<void> {
    drop(key);
    if (!bus) return;
    if (tx) await notifyInTransaction(tx, channel, key);
    else await bus.publish(channel, key);
  }

  async function get(key: string): Promise<V> {
    const hit = entries.get(key);
    if (hit && hit.until > now()) return hit.value;
    const pending = loading.get(key);
    if (pending) return pending;
    const promise = fill(key).finally(() => {
      if (loading.get(key) === promise) loading.delete(key);
    });
    loading.set(key, promise);
    return promise;
  }

  return {
    get,
    peek(key) {
      const hit = entries.get(key);
      if (!hit || hit.until <= now()) get(key).catch(onBackgroundError);
      return hit?.value;
    },
    async getMany(keys, loadMany) {
      const found = new Map<string, V>();
      const missing: string[] = [];
      const at = now();
      for (const key of keys) {
        const hit = entries.get(key);
        if (hit && hit.until > at) found.set(key, hit.value);
        else if (!found.has(key) && !missing.includes(key)) missing.push(key);
      }
      if (missing.length === 0) return found;
      const started = generation;
      await subscribe().catch(() => undefined);
      const loaded = await loadMany(missing);
      const current = generation === started;
      for (const [key, value] of loaded) {
        found.set(key, value);
        if (current) keep(key, value);
      }
      return found;
    },
    changed: (key, tx) => announce(key, tx),
    forget: (key) => drop(key),
    forgetAll: () => drop(ALL),
    changedAll: (tx) => announce(ALL, tx),
    get size() {
      return entries.size;
    },
  };
}
