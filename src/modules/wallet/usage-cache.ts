import type { UsageWindows } from './usage-windows.js';

/** A wallet's owner as the wallets table names it (`ownerKey(owner)`, or the owner a write returned). */
export interface OwnerRef {
  ownerType: string;
  ownerId: string;
}

export interface UsageCacheOptions {
  /** Epoch milliseconds (the service clock, so tests move it). */
  now: () => number;
  /** How long an answer is used: bounds how stale another instance's writes can leave it (default 2 s). */
  ttlMs?: number;
  /** Owners kept at most (each with the few window sets asked for); the oldest is dropped first (default 50,000). */
  maxOwners?: number;
}

export interface UsageCache {
  /** The owner's figures for `windows`: cached, or read through `load` (concurrent misses share one read). */
  get<K extends string>(owner: OwnerRef, windows: Record<K, Date>, load: () => Promise<UsageWindows<K>>): Promise<UsageWindows<K>>;
  /** A write to the owner's wallet committed: its figures are read again, and a read in flight keeps no answer. */
  changed(owner: OwnerRef): void;
  /**
   * A write to the owner's wallet inside a caller's transaction, committed later (or not): dropped now, and nothing is
   * kept for the owner for one TTL, so a read that sees the wallet before that commit is not served afterwards.
   */
  changing(owner: OwnerRef): void;
  /** Owners with figures kept. */
  readonly size: number;
}

type Figures = UsageWindows<string>;

interface Slot {
  /** Window set (names and moments) → figures, until when they are used. */
  entries: Map<string, { value: Figures; until: number }>;
  loading: Map<string, Promise<Figures>>;
}

const ownerOf = (owner: OwnerRef) => `${owner.ownerType}:${owner.ownerId}`;

/** The windows' names and moments: a new day, month or cycle is another key, so a miss. */
function windowsKey(windows: Record<string, Date>): string {
  let key = '';
  for (const name in windows) key += `${name}=${windows[name]!.getTime()};`;
  return key;
}

function frozen(value: Figures): Figures {
  for (const window of Object.values(value)) Object.freeze(window);
  return Object.freeze(value);
}

/**
 * The usage windows (`usageSince`) per wallet owner, in process. This instance drops an owner's figures after each
 * write to its wallet; another instance's writes show once the TTL passes. A read in flight stores its answer only
 * when no write to that owner was seen meanwhile (its slot is still the current one).
 *
 * Not built on the invalidating cache (platform/events/invalidating-cache.ts), on purpose: a write drops every window
 * set of its owner (that cache drops one key or all), each read brings its own loader (the caller's windows), and a
 * write in a caller's open transaction holds the owner out for one TTL where that cache would NOTIFY on commit: one
 * more statement in every metered transaction and a message to every instance per call.
 */
export function createUsageCache(options: UsageCacheOptions): UsageCache {
  const ttlMs = options.ttlMs ?? 2_000;
  const maxOwners = options.maxOwners ?? 50_000;
  const { now } = options;
  const slots = new Map<string, Slot>();
  /** Owners written in a caller's transaction → until when nothing is kept for them. */
  const held = new Map<string, number>();

  function isHeld(key: string, at: number): boolean {
    const until = held.get(key);
    if (until === undefined) return false;
    if (until > at) return true;
    held.delete(key);
    return false;
  }

  /** Map order is insertion order: re-inserting marks a key as the newest; the first one is the oldest. */
  function insert<V>(map: Map<string, V>, key: string, value: V): void {
    map.delete(key);
    if (map.size >= maxOwners) map.delete(map.keys().next().value!);
    map.set(key, value);
  }

  return {
    async get<K extends string>(owner: OwnerRef, windows: Record<K, Date>, load: () => Promise<UsageWindows<K>>): Promise<UsageWindows<K>> {
      const key = ownerOf(owner);
      const wkey = windowsKey(windows);
      const at = now();
      let slot = slots.get(key);
      if (slot) {
        const hit = slot.entries.get(wkey);
        if (hit && hit.until > at) return hit.value as UsageWindows<K>;
        const pending = slot.loading.get(wkey);
        if (pending) return pending as Promise<UsageWindows<K>>;
      }
      if (isHeld(key, at)) return load();
      if (!slot) {
        slot = { entries: new Map(), loading: new Map() };
        insert(slots, key, slot);
      }
      const current = slot;
      const promise: Promise<Figures> = load()
        .then((value) => {
          if (slots.get(key) !== current) return value; // written (or evicted) meanwhile: not kept
          for (const [k, entry] of current.entries) if (entry.until <= at) current.entries.delete(k);
          // The figures are as of the read's start: the TTL counts from then.
          current.entries.set(wkey, { value: frozen(value), until: at + ttlMs });
          insert(slots, key, current);
          return value;
        })
        .finally(() => {
          if (current.loading.get(wkey) === promise) current.loading.delete(wkey);
        });
      current.loading.set(wkey, promise);
      return promise as Promise<UsageWindows<K>>;
    },

    changed(owner) {
      slots.delete(ownerOf(owner));
    },

    changing(owner) {
      const key = ownerOf(owner);
      slots.delete(key);
      insert(held, key, now() + ttlMs);
    },

    get size() {
      return slots.size;
    },
  };
}
