import { beforeAll, describe, expect, it } from 'vitest';
import type { BuiltApp } from '../src/app.js';
import { within } from './helpers/eventually.js';
import { twoInstances } from './helpers/shared-database.js';
import { bearer, signUpAs } from './helpers/test-app.js';

/**
 * Two instances on one database, each with its own in-process copy of the flags and of the banners: a change made
 * through one is seen by the other within a second (a statement trigger announces it through LISTEN/NOTIFY), and by
 * the changing one at once.
 */
const instances = twoInstances('flags-cache');
let a: BuiltApp;
let b: BuiltApp;
beforeAll(() => {
  ({ a, b } = instances);
});

const flagOn = async (on: BuiltApp, key: string) =>
  (await on.app.inject({ method: 'GET', url: '/v1/flags' })).json<{ flags: Record<string, boolean> }>().flags[key];
const bannerTitles = async (on: BuiltApp) =>
  (await on.app.inject({ method: 'GET', url: '/v1/announcements' })).json<{ items: Array<{ title: string }> }>().items.map((i) => i.title);

describe('flag and banner caches follow changes on every instance', () => {
  it('a flag switched on one instance flips on the other within a second; a deletion too', async () => {
    const operator = await signUpAs({ app: a.app, platform: a.platform }, 'SUPER_ADMIN');
    const headers = bearer(operator.accessToken);
    expect(
      (await a.app.inject({ method: 'POST', url: '/v1/admin/flags', headers, payload: { key: 'shared', targeting: { everyone: true } } })).statusCode,
    ).toBe(201);
    // Both instances load (and keep) the flag while it is off.
    expect(await flagOn(a, 'shared')).toBe(false);
    expect(await within(async () => (await flagOn(b, 'shared')) === false, 1000)).toBeLessThan(1000);
    expect(await flagOn(b, 'shared')).toBe(false);

    expect((await a.app.inject({ method: 'PATCH', url: '/v1/admin/flags/shared', headers, payload: { enabled: true } })).statusCode).toBe(200);
    expect(await flagOn(a, 'shared')).toBe(true);
    expect(await within(async () => (await flagOn(b, 'shared')) === true, 1000)).toBeLessThan(1000);

    expect((await b.app.inject({ method: 'DELETE', url: '/v1/admin/flags/shared', headers })).statusCode).toBe(200);
    expect(await flagOn(b, 'shared')).toBeUndefined();
    expect(await within(async () => (await flagOn(a, 'shared')) === undefined, 1000)).toBeLessThan(1000);
  });

  it('a banner created on one instance shows on the other within a second; its removal too', async () => {
    const operator = await signUpAs({ app: b.app, platform: b.platform }, 'SUPER_ADMIN');
    const headers = bearer(operator.accessToken);
    expect(await bannerTitles(a)).toEqual([]);
    const created = await b.app.inject({ method: 'POST', url: '/v1/admin/announcements', headers, payload: { title: 'Hello', body: 'Everyone' } });
    expect(created.statusCode).toBe(201);
    expect(await bannerTitles(b)).toEqual(['Hello']);
    expect(await within(async () => (await bannerTitles(a)).includes('Hello'), 1000)).toBeLessThan(1000);

    const id = created.json<{ id: string }>().id;
    expect((await a.app.inject({ method: 'DELETE', url: `/v1/admin/announcements/${id}`, headers })).statusCode).toBe(200);
    expect(await within(async () => (await bannerTitles(b)).length === 0, 1000)).toBeLessThan(1000);
  });
});
