import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { within } from '../../../test/helpers/eventually.js';
import { adminQuery, testDatabaseUrl } from '../../../test/helpers/pg-admin.js';
import { createTestDatabase, type TestDatabase } from '../../../test/helpers/test-database.js';
import { openDatabase, type Database } from './database.js';
import { createPgListener, LISTENER_APPLICATION_NAME } from './pg-listener.js';

// The embedded database never loses its in-process listener: only PostgreSQL has a connection to lose.
describe.runIf(testDatabaseUrl())('the LISTEN connection comes back by itself (PostgreSQL)', () => {
  let testDb: TestDatabase;
  let database: Database;
  let publisher: pg.Client;

  beforeAll(async () => {
    testDb = await createTestDatabase();
    database = await openDatabase({ url: testDb.url!, onError: () => undefined });
    // Its own connection, so notifications go out while the listener's side refuses connections.
    publisher = new pg.Client({ connectionString: testDb.url! });
    await publisher.connect();
  });

  afterAll(async () => {
    await publisher?.end();
    await database?.close();
    await testDb?.drop();
  });

  const listenerPids = async (): Promise<number[]> =>
    (
      await publisher.query<{ pid: number }>('select pid from pg_stat_activity where datname = current_database() and application_name = $1 order by pid', [
        LISTENER_APPLICATION_NAME,
      ])
    ).rows.map((row) => row.pid);

  const terminate = (pid: number) => publisher.query('select pg_terminate_backend($1)', [pid]);

  function inbox(channel: string) {
    const received: string[] = [];
    return { received, listen: () => database.listen(channel, (payload) => received.push(payload)) };
  }

  it('listens again on every channel after its backend is terminated, and reports the gap once', async () => {
    const first = inbox('listener_first');
    const second = inbox('listener_second');
    await first.listen();
    await second.listen();
    let resets = 0;
    const stop = database.onListenerReset(() => resets++);
    await publisher.query(`select pg_notify('listener_first', 'before')`);
    await within(async () => first.received.length === 1, 2000);

    const [pid] = await listenerPids();
    expect(pid).toBeDefined();
    await terminate(pid!);
    // Nobody calls listen() again: the listener reconnects on its own.
    await within(async () => resets === 1, 2000);
    const [again] = await listenerPids();
    expect(again).not.toBe(pid);

    await publisher.query(`select pg_notify('listener_first', 'after'), pg_notify('listener_second', 'after')`);
    await within(async () => first.received.length === 2 && second.received.length === 1, 2000);
    expect(first.received).toEqual(['before', 'after']);
    expect(second.received).toEqual(['after']);
    expect(resets).toBe(1);
    stop();
  });

  it('keeps trying, backing off, while the database refuses connections, and comes back when it accepts them', async () => {
    const errors: Error[] = [];
    const listener = createPgListener({ client: { connectionString: testDb.url! }, onError: (err) => errors.push(err), backoff: { minMs: 10, maxMs: 50 } });
    const received: string[] = [];
    let resets = 0;
    listener.onReset(() => resets++);
    const name = new URL(testDb.url!).pathname.slice(1);
    try {
      const ofDatabase = new Set(await listenerPids());
      await listener.listen('listener_outage', (payload) => received.push(payload));
      const own = (await listenerPids()).filter((pid) => !ofDatabase.has(pid));
      expect(own).toHaveLength(1);
      await adminQuery(testDatabaseUrl()!, `alter database ${name} allow_connections false`);
      await terminate(own[0]!);
      await within(async () => errors.filter((err) => /not currently accepting connections/.test(err.message)).length >= 3, 3000);
      await publisher.query(`select pg_notify('listener_outage', 'missed')`);
      expect(resets).toBe(0);

      await adminQuery(testDatabaseUrl()!, `alter database ${name} allow_connections true`);
      await within(async () => resets === 1, 3000);
      await publisher.query(`select pg_notify('listener_outage', 'heard')`);
      await within(async () => received.includes('heard'), 2000);
      expect(received).toEqual(['heard']);
    } finally {
      await adminQuery(testDatabaseUrl()!, `alter database ${name} allow_connections true`);
      await listener.close();
    }
  });

  it('stops reconnecting once closed, even while waiting for its next attempt', async () => {
    const ofDatabase = new Set(await listenerPids());
    const listener = createPgListener({ client: { connectionString: testDb.url! }, backoff: { minMs: 100, maxMs: 100 } });
    await listener.listen('listener_closing', () => undefined);
    const own = (await listenerPids()).filter((pid) => !ofDatabase.has(pid));
    expect(own).toHaveLength(1);
    await terminate(own[0]!);
    await listener.close();
    await new Promise((resolve) => setTimeout(resolve, 300)); // past the attempt it was waiting for
    expect(await listenerPids()).toEqual([...ofDatabase]);
    await expect(listener.listen('listener_closing', () => undefined)).rejects.toThrow(/closed/);
  });
});
