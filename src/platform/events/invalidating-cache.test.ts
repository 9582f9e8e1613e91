import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../test/helpers/test-database.js';
import { openDatabase, type Database } from '../db/database.js';
import { createEventBus, type EventBus } from './event-bus.js';
import { createInvalidatingCache } from './invalidating-cache.js';

let testDb: TestDatabase;
let first: Database;
let second: Database;

beforeAll(async () => {
  testDb = await createTestDatabase();
  first = testDb.database ?? (await openDatabase({ url: testDb.url! }));
  // On PostgreSQL the second instance has its own pool and listener, as another process would.
  second = testDb.database ?? (await openDatabase({ url: testDb.url! }));
});

afterAll(async () => {
  if (!testDb.database) {
    await first.close();
    await second.close();
  }
  await testDb.drop();
});

async function until(check: () => boolean, ms = 3000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

function counting(values: Map<string, string>) {
  const loads: string[] = [];
  return {
    loads,
    load: async (key: string) => {
      loads.push(key);
      return values.get(key) ?? 'missing';
    },
  };
}

/** A bus whose listener can be made to come back from a loss on demand. */
function reconnectingBus() {
  const callbacks = new Set<() => void>();
  const bus: EventBus = {
    publish: async () => undefined,
    subscribe: async () => async () => undefined,
    onReconnect(callback) {
      callbacks.add(callback);
      return () => callbacks.delete(callback);
    },
  };
  return { bus, reconnect: () => callbacks.forEach((callback) => callback()) };
}

describe('invalidating cache', () => {
  it('loads once, serves hits, and shares one load between concurrent misses', async () => {
    const source = counting(new Map([['a', 'A1']]));
    const cache = createInvalidatingCache({ name: 'unit_hits', load: source.load });
    const answers = await Promise.all([cache.get('a'), cache.get('a'), cache.get('a')]);
    expect(answers).toEqual(['A1', 'A1', 'A1']);
    expect(await cache.get('a')).toBe('A1');
    expect(source.loads).toEqual(['a']);
  });

  it('drops an entry on every instance when its owner announces a change', async () => {
    const values = new Map([['k', 'v1']]);
    const onFirst = counting(values);
    const onSecond = counting(values);
    const cacheFirst = createInvalidatingCache({ name: 'cross', load: onFirst.load, bus: createEventBus(first) });
    const cacheSecond = createInvalidatingCache({ name: 'cross', load: onSecond.load, bus: createEventBus(second) });
    expect(await cacheFirst.get('k')).toBe('v1');
    expect(await cacheSecond.get('k')).toBe('v1');

    values.set('k', 'v2');
    await cacheFirst.changed('k');
    expect(await cacheFirst.get('k')).toBe('v2'); // at once where the change happened
    await until(() => cacheSecond.size === 0);
    expect(await cacheSecond.get('k')).toBe('v2');
    expect(onSecond.loads).toEqual(['k', 'k']);
  });

  it('announced inside a transaction: delivered on commit, never on rollback', async () => {
    const values = new Map([['k', 'v1']]);
    const other = counting(values);
    const remote = createInvalidatingCache({ name: 'tx', load: other.load, bus: createEventBus(second) });
    const local = createInvalidatingCache({ name: 'tx', load: async () => 'x', bus: createEventBus(first) });
    await remote.get('k');

    await first.db
      .transaction(async (tx) => {
        await local.changed('k', tx);
        throw new Error('rolled back');
      })
      .catch(() => undefined);
    await first.db.execute(sql`select 1`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(remote.size).toBe(1);

    await first.db.transaction(async (tx) => local.changed('k', tx));
    await until(() => remote.size === 0);
  });

  it('getMany: hits from the cache, the misses in one load, unknown keys neither returned nor kept', async () => {
    const batches: string[][] = [];
    const values = new Map([
      ['a', 'A'],
      ['b', 'B'],
      ['c', 'C'],
    ]);
    const loadMany = async (missing: string[]) => {
      batches.push(missing);
      return new Map(missing.filter((k) => values.has(k)).map((k) => [k, values.get(k)!]));
    };
    const cache = createInvalidatingCache<string>({ name: 'unit_many', load: async (k) => values.get(k) ?? 'missing' });
    expect(await cache.get('a')).toBe('A');
    expect([...(await cache.getMany(['a', 'b', 'b', 'x', 'c'], loadMany))].sort()).toEqual([
      ['a', 'A'],
      ['b', 'B'],
      ['c', 'C'],
    ]);
    expect(batches).toEqual([['b', 'x', 'c']]);
    expect([...(await cache.getMany(['c', 'a', 'b'], loadMany))].sort()).toEqual([
      ['a', 'A'],
      ['b', 'B'],
      ['c', 'C'],
    ]);
    expect(batches).toHaveLength(1);
    expect(cache.size).toBe(3);
    // A change while a batch is read: the batch answers its callers but keeps nothing.
    cache.forget('b');
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const slow = cache.getMany(['b'], async (missing) => {
      await gate;
      return loadMany(missing);
    });
    await new Promise((resolve) => setTimeout(resolve, 0));
    await cache.changed('c');
    release();
    expect([...(await slow)]).toEqual([['b', 'B']]);
    expect(cache.size).toBe(1);
  });

  it('never stores an answer whose load started before an invalidation', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let version = 1;
    let reading = false;
    const cache = createInvalidatingCache({
      name: 'race',
      load: async () => {
        const seen = version;
        reading = true;
        await gate;
        return seen;
      },
    });
    const slow = cache.get('k');
    await until(() => reading);
    version = 2;
    await cache.changed('k');
    release();
    expect(await slow).toBe(1); // that caller asked before the change
    expect(cache.size).toBe(0);
    expect(await cache.get('k')).toBe(2);
  });

  it('drops every entry when the listener reconnects, and keeps no answer whose load started before', async () => {
    const { bus, reconnect } = reconnectingBus();
    let version = 1;
    let release!: () => void;
    let gate: Promise<void> | null = null;
    const cache = createInvalidatingCache({
      name: 'reconnect',
      bus,
      load: async (key: string) => {
        const seen = `${key}${version}`;
        await gate;
        return seen;
      },
    });
    expect(await cache.get('a')).toBe('a1');
    expect(await cache.get('b')).toBe('b1');
    gate = new Promise<void>((resolve) => (release = resolve));
    const slow = cache.get('c');
    const slowMany = cache.getMany(['d'], async (missing) => {
      const seen = new Map(missing.map((key) => [key, `${key}${version}`]));
      await gate;
      return seen;
    });
    await new Promise((resolve) => setTimeout(resolve, 0));

    version = 2; // changed while the notifications were missed
    reconnect();
    expect(cache.size).toBe(0);
    release();
    expect(await slow).toBe('c1'); // that caller asked before the reconnect
    expect([...(await slowMany)]).toEqual([['d', 'd1']]);
    expect(cache.size).toBe(0);
    gate = null;
    expect(await cache.get('a')).toBe('a2');
    expect(await cache.get('c')).toBe('c2');
  });

  it('expires entries after the TTL and at a value-given moment, and changedAll drops everything', async () => {
    let clock = 0;
    const source = counting(
      new Map([
        ['a', 'A'],
        ['b', 'B'],
      ]),
    );
    const cache = createInvalidatingCache({ name: 'ttl', load: source.load, ttlMs: 1000, now: () => clock, expiresAt: (v) => (v === 'B' ? 100 : null) });
    await cache.get('a');
    await cache.get('b');
    clock = 150;
    await cache.get('a');
    await cache.get('b');
    expect(source.loads).toEqual(['a', 'b', 'b']);
    clock = 1200;
    await cache.get('a');
    expect(source.loads).toEqual(['a', 'b', 'b', 'a']);
    await cache.changedAll();
    expect(cache.size).toBe(0);
  });

  it('peek answers at once: nothing while missing (its load shared with get), the kept value, an expired one while it reloads', async () => {
    let clock = 0;
    const values = new Map([['k', 'v1']]);
    const source = counting(values);
    const cache = createInvalidatingCache({ name: 'peek', load: source.load, ttlMs: 1000, now: () => clock });
    expect(cache.peek('k')).toBeUndefined();
    expect(await cache.get('k')).toBe('v1');
    expect(source.loads).toEqual(['k']);
    expect(cache.peek('k')).toBe('v1');

    values.set('k', 'v2');
    clock = 1000;
    expect(cache.peek('k')).toBe('v1'); // past the TTL but never invalidated: answered while it reloads
    await until(() => cache.peek('k') === 'v2');
    expect(source.loads).toEqual(['k', 'k']);

    cache.forget('k');
    expect(cache.peek('k')).toBeUndefined(); // an invalidated value is never answered
  });

  it('reloadDropped: a dropped entry that was kept is loaded again at once (a change, a reconnect); failures go to onBackgroundError', async () => {
    const { bus, reconnect } = reconnectingBus();
    const values = new Map([['a', 'A1']]);
    const source = counting(values);
    const failures: unknown[] = [];
    let failing = false;
    const cache = createInvalidatingCache({
      name: 'reload',
      bus,
      reloadDropped: true,
      onBackgroundError: (err) => failures.push(err),
      load: async (key: string) => {
        if (failing) throw new Error('down');
        return source.load(key);
      },
    });
    await cache.get('a');
    values.set('a', 'A2');
    await cache.changed('a');
    expect(cache.peek('a')).toBeUndefined();
    await until(() => cache.size === 1);
    expect(cache.peek('a')).toBe('A2');

    cache.forget('b'); // never kept here: nothing to reload
    values.set('a', 'A3');
    reconnect();
    await until(() => cache.size === 1);
    expect(cache.peek('a')).toBe('A3');
    expect(source.loads).toEqual(['a', 'a', 'a']);

    failing = true;
    cache.forgetAll();
    await until(() => failures.length === 1);
    expect(cache.size).toBe(0);
  });
});
