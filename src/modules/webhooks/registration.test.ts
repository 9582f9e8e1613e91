import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webhookEndpoints } from '../../db/schema/webhooks.js';
import { checkWebhookUrl } from './destination.js';
import { bearer, createTestApp, json, signUp, type TestApp } from '../../../test/helpers/test-app.js';

/** Without ALLOW_PRIVATE_NETWORK (production's default): only https URLs of public addresses are accepted. */
let strict: TestApp;
/** With ALLOW_PRIVATE_NETWORK=true: loopback receivers over http, as the delivery tests use. */
let open: TestApp;
beforeAll(async () => {
  [strict, open] = await Promise.all([createTestApp(), createTestApp({ env: { ALLOW_PRIVATE_NETWORK: 'true' } })]);
});
afterAll(async () => {
  await strict?.close();
  await open?.close();
});

const call = (t: TestApp, token: string, method: 'GET' | 'POST' | 'PATCH', url: string, payload?: object) =>
  t.app.inject({ method, url, headers: bearer(token), ...(payload ? { payload } : {}) });

describe('registration refusals without private networking', () => {
  it('refuses http, private and loopback addresses, credentials and unknown events with clear 400s, and stores nothing', async () => {
    const { accessToken } = await signUp(strict.app);
    const cases: Array<[object, RegExp]> = [
      [{ url: 'http://hooks.example.com/in', events: ['job.succeeded'] }, /must use https \(got "http"\)/],
      [{ url: 'https://10.1.2.3/in', events: ['job.succeeded'] }, /10\.1\.2\.3, a private address: webhooks are delivered to public internet addresses only/],
      [{ url: 'https://127.0.0.1:8443/in', events: ['*'] }, /127\.0\.0\.1, a loopback address/],
      [{ url: 'https://[::1]/in', events: ['*'] }, /::1, a loopback address/],
      [{ url: 'https://169.254.169.254/latest', events: ['*'] }, /169\.254\.169\.254, a metadata address/],
      [{ url: 'https://169.254.10.1/latest', events: ['*'] }, /link-local address/],
      [{ url: 'https://localhost/in', events: ['*'] }, /loopback address/],
      [{ url: 'https://user:pw@hooks.example.com/in', events: ['*'] }, /must not contain a user name or password/],
      [{ url: 'ftp://hooks.example.com/in', events: ['*'] }, /must use https/],
      [{ url: 'not a url', events: ['*'] }, /not a valid absolute URL/],
      [{ url: 'https://hooks.example.com/in', events: ['job.started'] }, /./],
      [{ url: 'https://hooks.example.com/in', events: [] }, /./],
      [{ url: 'https://hooks.example.com/in' }, /./],
    ];
    for (const [payload, message] of cases) {
      const response = await call(strict, accessToken, 'POST', '/v1/webhooks', payload);
      const body = json(response);
      expect({ payload, status: response.statusCode, code: body.error.code }).toEqual({ payload, status: 400, code: 'BAD_REQUEST' });
      expect(body.error.message).toMatch(message);
    }
    expect(json(await call(strict, accessToken, 'GET', '/v1/webhooks')).items).toEqual([]);
  });

  it('refuses a PATCH to a private address and keeps the webhook as it was', async () => {
    const { accessToken, user } = await signUp(strict.app);
    // a public receiver cannot be resolved offline, so the registration is written as a fixture
    const [hook] = await strict.platform.db
      .insert(webhookEndpoints)
      .values({ userId: user.id, url: 'https://hooks.example.com/in', events: ['*'], secret: 'whsec_fixture' })
      .returning();
    const response = await call(strict, accessToken, 'PATCH', `/v1/webhooks/${hook!.id}`, { url: 'https://192.168.0.10/in', status: 'DISABLED' });
    expect(response.statusCode).toBe(400);
    expect(json(response).error.message).toMatch(/192\.168\.0\.10, a private address/);
    expect(json(await call(strict, accessToken, 'GET', '/v1/webhooks')).items[0]).toMatchObject({ url: 'https://hooks.example.com/in', status: 'ACTIVE' });
  });
});

describe('plain http with private networking allowed: private and loopback hosts only', () => {
  const publicHttp = /must use https: "[^"]+" is a public address \([^)]+\), and plain http is accepted for private and loopback hosts only/;

  it('refuses to register a public host over http, by IP or IPv6, and stores nothing', async () => {
    const { accessToken } = await signUp(open.app);
    for (const url of ['http://93.184.216.34/hook', 'http://[2606:4700:4700::1111]/hook', 'http://8.8.8.8:8080/hook']) {
      const response = await call(open, accessToken, 'POST', '/v1/webhooks', { url, events: ['*'] });
      expect({ url, status: response.statusCode, code: json(response).error.code }).toEqual({ url, status: 400, code: 'BAD_REQUEST' });
      expect(json(response).error.message).toMatch(publicHttp);
      expect(json(response).error.details).toMatchObject({ field: 'url', protocol: 'http' });
    }
    expect(json(await call(open, accessToken, 'GET', '/v1/webhooks')).items).toEqual([]);
  });

  it('refuses a public name over http (its resolved addresses decide)', async () => {
    const resolve = async () => ['93.184.216.34'];
    const refused = await checkWebhookUrl('http://example.com/hook', { allowPrivateNetwork: true, resolve }).catch((err: unknown) => err);
    expect(refused).toMatchObject({ statusCode: 400, message: expect.stringMatching(publicHttp) });
    // The same name over https is fine, and a name inside the network may use http.
    expect(await checkWebhookUrl('https://example.com/hook', { allowPrivateNetwork: true, resolve })).toBe('https://example.com/hook');
    expect(await checkWebhookUrl('http://hooks.internal/in', { allowPrivateNetwork: true, resolve: async () => ['10.0.0.5'] })).toBe(
      'http://hooks.internal/in',
    );
    // One public answer among private ones makes the host public.
    const mixed = await checkWebhookUrl('http://mixed.example/in', { allowPrivateNetwork: true, resolve: async () => ['10.0.0.5', '93.184.216.34'] }).catch(
      (err: unknown) => err,
    );
    expect(mixed).toMatchObject({ statusCode: 400, message: expect.stringMatching(publicHttp) });
  });

  it('accepts loopback over http, by address and by name', async () => {
    const { accessToken } = await signUp(open.app);
    for (const url of ['http://127.0.0.1:9/hook', 'http://localhost:9/hook', 'http://[::1]:9/hook', 'http://10.1.2.3/hook']) {
      const response = await call(open, accessToken, 'POST', '/v1/webhooks', { url, events: ['*'] });
      expect({ url, status: response.statusCode }).toEqual({ url, status: 201 });
    }
  });

  it('refuses a cloud metadata address even with private networking allowed', async () => {
    const { accessToken } = await signUp(open.app);
    for (const url of ['http://169.254.169.254/latest/meta-data/', 'http://[fd00:ec2::254]/', 'https://100.100.100.200/']) {
      const response = await call(open, accessToken, 'POST', '/v1/webhooks', { url, events: ['*'] });
      expect({ url, status: response.statusCode }).toEqual({ url, status: 400 });
      expect(json(response).error.message).toMatch(/a metadata address: webhooks are delivered to public internet addresses only/);
    }
    expect(json(await call(open, accessToken, 'GET', '/v1/webhooks')).items).toEqual([]);
  });

  it('refuses a PATCH moving a webhook to a public host over http, and keeps it as it was', async () => {
    const { accessToken } = await signUp(open.app);
    const hook = json(await call(open, accessToken, 'POST', '/v1/webhooks', { url: 'http://127.0.0.1:9/mine', events: ['*'] }));
    const response = await call(open, accessToken, 'PATCH', `/v1/webhooks/${hook.id}`, { url: 'http://93.184.216.34/steal', events: ['job.failed'] });
    expect(response.statusCode).toBe(400);
    expect(json(response).error.message).toMatch(publicHttp);
    expect(json(await call(open, accessToken, 'GET', '/v1/webhooks')).items[0]).toMatchObject({
      url: 'http://127.0.0.1:9/mine',
      events: ['*'],
      updatedAt: hook.updatedAt,
    });
  });
});

describe('registration, listing, changes and rotation', () => {
  it('registers with the secret in clear once, lists it masked, and publishes the event catalog', async () => {
    const { accessToken } = await signUp(open.app);
    const events = json(await call(open, accessToken, 'GET', '/v1/webhooks/events'));
    expect(events.items).toEqual(['job.succeeded', 'job.failed', 'generation.persisted', 'payment.succeeded', 'payment.refunded', 'subscription.canceled']);

    const response = await call(open, accessToken, 'POST', '/v1/webhooks', {
      url: 'http://127.0.0.1:9/in#frag',
      events: ['job.succeeded', 'job.failed'],
      description: 'build bot',
    });
    expect(response.statusCode).toBe(201);
    const created = json(response);
    expect(created).toEqual({
      id: expect.any(String),
      url: 'http://127.0.0.1:9/in',
      events: ['job.succeeded', 'job.failed'],
      description: 'build bot',
      status: 'ACTIVE',
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9_-]{43}$/),
      failureCount: 0,
      disabledAt: null,
      disabledReason: null,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    const listed = json(await call(open, accessToken, 'GET', '/v1/webhooks')).items;
    expect(listed).toHaveLength(1);
    expect(listed[0]).toEqual({ ...created, secret: `whsec_${'•'.repeat(8)}${created.secret.slice(-4)}` });
    expect(JSON.stringify(listed)).not.toContain(created.secret);

    // "*" subscribes to everything and stands alone
    const all = json(await call(open, accessToken, 'POST', '/v1/webhooks', { url: 'http://127.0.0.1:9/all', events: ['*', 'job.failed'] }));
    expect(all.events).toEqual(['*']);
  });

  it('PATCH changes url, events and status; re-enabling resets the failure count; rotation replaces the secret at once', async () => {
    const { accessToken } = await signUp(open.app);
    const created = json(await call(open, accessToken, 'POST', '/v1/webhooks', { url: 'http://127.0.0.1:9/a', events: ['job.succeeded'] }));
    const changed = json(
      await call(open, accessToken, 'PATCH', `/v1/webhooks/${created.id}`, { url: 'http://127.0.0.1:9/b', events: ['generation.persisted'] }),
    );
    expect(changed).toMatchObject({ url: 'http://127.0.0.1:9/b', events: ['generation.persisted'], status: 'ACTIVE' });
    expect(changed.secret).not.toBe(created.secret);
    expect(changed.secret.slice(-4)).toBe(created.secret.slice(-4));

    const disabled = json(await call(open, accessToken, 'PATCH', `/v1/webhooks/${created.id}`, { status: 'DISABLED' }));
    expect(disabled).toMatchObject({ status: 'DISABLED', disabledReason: 'Disabled by its owner.', disabledAt: expect.any(String) });
    const reenabled = json(await call(open, accessToken, 'PATCH', `/v1/webhooks/${created.id}`, { status: 'ACTIVE' }));
    expect(reenabled).toMatchObject({ status: 'ACTIVE', failureCount: 0, disabledAt: null, disabledReason: null });

    for (const bad of [{}, { status: 'PAUSED' }, { url: 'ftp://x/y' }, { events: ['nope'] }, { secret: 'whsec_mine' }]) {
      const response = await call(open, accessToken, 'PATCH', `/v1/webhooks/${created.id}`, bad);
      expect({ bad, status: response.statusCode }).toEqual({ bad, status: 400 });
    }
    expect(json(await call(open, accessToken, 'GET', '/v1/webhooks')).items[0]).toMatchObject({
      url: 'http://127.0.0.1:9/b',
      events: ['generation.persisted'],
      status: 'ACTIVE',
    });

    const rotated = await call(open, accessToken, 'POST', `/v1/webhooks/${created.id}/rotate-secret`);
    expect(rotated.statusCode).toBe(200);
    expect(json(rotated).secret).toMatch(/^whsec_/);
    expect(json(rotated).secret).not.toBe(created.secret);
    expect(json(await call(open, accessToken, 'GET', '/v1/webhooks')).items[0].secret.slice(-4)).toBe(json(rotated).secret.slice(-4));
  });

  it("another user's webhook id is 404 on every route, and changes nothing", async () => {
    const owner = await signUp(open.app);
    const stranger = await signUp(open.app);
    const hook = json(await call(open, owner.accessToken, 'POST', '/v1/webhooks', { url: 'http://127.0.0.1:9/mine', events: ['*'] }));
    const attempts: Array<['GET' | 'POST' | 'PATCH', string, object?]> = [
      ['PATCH', `/v1/webhooks/${hook.id}`, { status: 'DISABLED' }],
      ['POST', `/v1/webhooks/${hook.id}/rotate-secret`],
      ['GET', `/v1/webhooks/${hook.id}/deliveries`],
      ['POST', `/v1/webhooks/${hook.id}/deliveries/01900000-0000-7000-8000-000000000000/resend`],
      ['PATCH', '/v1/webhooks/01900000-0000-7000-8000-000000000000', { status: 'ACTIVE' }],
    ];
    for (const [method, url, payload] of attempts) {
      const response = await call(open, stranger.accessToken, method, url, payload);
      expect({ url, status: response.statusCode, code: json(response).error.code }).toEqual({ url, status: 404, code: 'NOT_FOUND' });
    }
    expect(json(await call(open, stranger.accessToken, 'GET', '/v1/webhooks')).items).toEqual([]);
    expect(json(await call(open, owner.accessToken, 'GET', '/v1/webhooks')).items[0]).toMatchObject({
      status: 'ACTIVE',
      secret: expect.stringMatching(hook.secret.slice(-4)),
    });
    expect((await call(open, owner.accessToken, 'GET', `/v1/webhooks/${hook.id}/deliveries?unknown=1`)).statusCode).toBe(400);
    expect((await call(open, owner.accessToken, 'PATCH', '/v1/webhooks/not-a-uuid', { status: 'ACTIVE' })).statusCode).toBe(400);
  });

  it('deleting the account disables its webhooks', async () => {
    const { accessToken, password, user } = await signUp(open.app);
    await call(open, accessToken, 'POST', '/v1/webhooks', { url: 'http://127.0.0.1:9/gone', events: ['*'] });
    expect((await call(open, accessToken, 'POST', '/v1/account/delete', { password })).statusCode).toBe(200);
    const [row] = await open.platform.db.select().from(webhookEndpoints).where(eq(webhookEndpoints.userId, user.id));
    expect(row).toMatchObject({ status: 'DISABLED', disabledReason: 'The account was deleted.' });
  });

  it('caps an account at 20 webhooks', async () => {
    const { accessToken } = await signUp(open.app);
    for (let i = 0; i < 20; i++)
      expect((await call(open, accessToken, 'POST', '/v1/webhooks', { url: `http://127.0.0.1:9/${i}`, events: ['*'] })).statusCode).toBe(201);
    const refused = await call(open, accessToken, 'POST', '/v1/webhooks', { url: 'http://127.0.0.1:9/21', events: ['*'] });
    expect(refused.statusCode).toBe(400);
    expect(json(refused).error.message).toMatch(/already have 20 webhooks/);
  });

  it('every route needs a token', async () => {
    for (const [method, url] of [
      ['GET', '/v1/webhooks/events'],
      ['GET', '/v1/webhooks'],
      ['POST', '/v1/webhooks'],
    ] as const) {
      expect((await open.app.inject({ method, url })).statusCode).toBe(401);
    }
  });
});
