import { randomBytes } from 'node:crypto';
import type { Counter } from 'prom-client';
import { describe, expect, it } from 'vitest';
import type { BuiltApp } from '../src/app.js';
import { LISTENER_APPLICATION_NAME } from '../src/platform/db/pg-listener.js';
import { within } from './helpers/eventually.js';
import { createApiKey, setPlan } from './helpers/gateway.js';
import { testDatabaseUrl } from './helpers/pg-admin.js';
import { twoInstances } from './helpers/shared-database.js';
import { bearer, signUp } from './helpers/test-app.js';

/**
 * Two instances on one PostgreSQL database; B's LISTEN connection is cut (as a failover does) and revocations made on
 * A still reach B within a second: B's listener comes back by itself, LISTENs again, and drops the caches it could not
 * keep fresh meanwhile. The embedded database has one in-process listener that cannot be cut.
 */
describe.runIf(testDatabaseUrl())('revocations reach an instance whose LISTEN connection was cut (PostgreSQL)', () => {
  const instances = twoInstances('listener-reconnect');

  /** The backend of `on`'s listener: the one whose last statement was the LISTEN of a channel only it subscribes to. */
  async function listenerPidOf(on: BuiltApp): Promise<number> {
    const probe = `probe_${randomBytes(6).toString('hex')}`;
    await on.platform.events.subscribe(probe, () => undefined);
    const { rows } = await on.platform.database.query<{ pid: number }>(
      'select pid from pg_stat_activity where datname = current_database() and application_name = $1 and query = $2',
      [LISTENER_APPLICATION_NAME, `LISTEN "${probe}"`],
    );
    expect(rows).toHaveLength(1);
    return rows[0]!.pid;
  }

  const reconnects = async (on: BuiltApp): Promise<number> => {
    const counter = on.platform.metrics.registry.getSingleMetric('storefront_db_listener_reconnects_total') as Counter;
    return (await counter.get()).values[0]?.value ?? 0;
  };

  const cut = async (on: BuiltApp) => {
    const pid = await listenerPidOf(on);
    await instances.a.platform.database.query('select pg_terminate_backend($1)', [pid]);
  };

  it('a session signed out on A right after B lost its listener is refused by B within a second', async () => {
    const { a, b } = instances;
    const { accessToken, refreshToken } = await signUp(a.app);
    const me = (on: BuiltApp) => on.app.inject({ method: 'GET', url: '/v1/users/me', headers: bearer(accessToken) });
    expect((await me(b)).statusCode).toBe(200); // B now holds the open session in its cache
    const before = await reconnects(b);

    await cut(b);
    // Announced while B may still be without its listener: the notification is lost then, and the reconnect drops it.
    expect((await a.app.inject({ method: 'POST', url: '/v1/auth/logout', payload: { refreshToken } })).statusCode).toBe(200);
    await within(async () => (await me(b)).statusCode === 401, 1000);
    await within(async () => (await reconnects(b)) === before + 1, 1000);
  });

  it("an API key revoked on A after B's listener came back is refused by B within a second (it listens again)", async () => {
    const { a, b } = instances;
    const { accessToken, user } = await signUp(a.app);
    await setPlan({ platform: a.platform }, user.id, 'starter');
    const { id, key } = await createApiKey({ app: a.app, platform: a.platform } as never, accessToken, ['ai:text']);
    const call = (on: BuiltApp) =>
      on.app.inject({
        method: 'POST',
        url: '/v1/ai/text',
        headers: bearer(key),
        payload: { model: 'local/text', messages: [{ role: 'user', content: 'hi' }], maxTokens: 8 },
      });
    const before = await reconnects(b);

    await cut(b);
    await within(async () => (await reconnects(b)) === before + 1, 1000);
    // Cached by B after its caches were dropped: only a notification heard on the new connection removes it now.
    expect((await call(b)).statusCode).toBe(200);
    expect((await a.app.inject({ method: 'DELETE', url: `/v1/account/api-keys/${id}`, headers: bearer(accessToken) })).statusCode).toBe(200);
    await within(async () => (await call(b)).statusCode === 401, 1000);
  });
});
