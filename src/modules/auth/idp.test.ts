import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { eq } from 'drizzle-orm';
import { exportJWK, generateKeyPair } from 'jose';
import Provider from 'oidc-provider';
import { sessions, userIdentities, users } from '../../db/schema/auth.js';
import { HOUR_MS } from '../../platform/clock/clock.js';
import { bearer, createTestApp, json, signUp, uniqueEmail, type TestApp } from '../../../test/helpers/test-app.js';

/**
 * A real OpenID provider (oidc-provider) on a local port. Its login and consent screens are answered by the test:
 * whoever `nextAccount` names signs in.
 */
const CLIENT_ID = 'storefront-web';
const CLIENT_SECRET = 'storefront-web-secret-of-some-length';
const OTHER_CLIENT_ID = 'another-app';
const OTHER_SECRET = 'another-app-secret-of-some-length';
const APP_BASE = 'http://localhost:3999';
const APP_CALLBACK = `${APP_BASE}/v1/auth/idp/callback`;
const FRONTEND = 'https://app.example.com';
const CLIENT_CALLBACK = 'http://127.0.0.1:9/client-callback';

interface Person {
  email: string;
  verified: boolean;
  name?: string;
}
const people = new Map<string, Person>();
let nextAccount = '';
let issuer = '';
let server: Server;
let t: TestApp;

beforeAll(async () => {
  server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: CLIENT_ID,
        client_secret: CLIENT_SECRET,
        redirect_uris: [APP_CALLBACK, CLIENT_CALLBACK],
        grant_types: ['authorization_code'],
        response_types: ['code'],
      },
      {
        client_id: OTHER_CLIENT_ID,
        client_secret: OTHER_SECRET,
        redirect_uris: [CLIENT_CALLBACK],
        grant_types: ['authorization_code'],
        response_types: ['code'],
      },
    ],
    jwks: { keys: [{ ...(await exportJWK(privateKey)), kid: 'test-key', alg: 'RS256', use: 'sig' }] },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    conformIdTokenClaims: false,
    ttl: { AccessToken: 600, AuthorizationCode: 60, Grant: 3600, IdToken: 3600, Interaction: 600, Session: 3600 },
    cookies: { keys: ['cookie-signing-key-for-the-test-provider'] },
    features: { devInteractions: { enabled: false } },
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    async findAccount(_ctx, id) {
      const person = people.get(id);
      if (!person) return undefined;
      return {
        accountId: id,
        claims: async () => ({ sub: id, email: person.email, email_verified: person.verified, ...(person.name ? { name: person.name } : {}) }),
      };
    },
  });
  const callback = provider.callback();
  const interact = async (req: IncomingMessage, res: ServerResponse) => {
    if (!req.url?.startsWith('/interaction/')) return callback(req, res);
    const details = await provider.interactionDetails(req, res);
    if (details.prompt.name === 'login') {
      await provider.interactionFinished(req, res, { login: { accountId: nextAccount } }, { mergeWithLastSubmission: false });
      return;
    }
    const grant = new provider.Grant({ accountId: details.session!.accountId, clientId: String(details.params.client_id) });
    grant.addOIDCScope(String(details.params.scope));
    await provider.interactionFinished(req, res, { consent: { grantId: await grant.save() } }, { mergeWithLastSubmission: true });
  };
  server.on('request', (req, res) => void interact(req, res));
  t = await createTestApp({
    env: { IDP_ISSUER: issuer, IDP_CLIENT_ID: CLIENT_ID, IDP_CLIENT_SECRET: CLIENT_SECRET, PUBLIC_BASE_URL: APP_BASE, FRONTEND_URL: FRONTEND },
  });
});

afterAll(async () => {
  await t?.close();
  await new Promise<void>((resolve) => server?.close(() => resolve()));
});

/** A person at the provider; returns their subject id. */
function person(p: Person): string {
  const id = `acct-${people.size + 1}-${Date.now()}`;
  people.set(id, p);
  return id;
}

/** A browser at the provider: follows its redirects with its cookies until it leaves for `stopAt`. */
async function browse(startUrl: string, stopAt: string): Promise<URL> {
  const jar = new Map<string, string>();
  let url = startUrl;
  for (let hop = 0; hop < 15; hop++) {
    if (url.startsWith(stopAt)) return new URL(url);
    const response = await fetch(url, { redirect: 'manual', headers: { cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; ') } });
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const [name, ...rest] = pair!.split('=');
      const value = rest.join('=');
      if (value) jar.set(name!.trim(), value);
      else jar.delete(name!.trim());
    }
    const location = response.headers.get('location');
    if (!location) throw new Error(`the provider stopped at ${url} with ${response.status}: ${await response.text()}`);
    url = new URL(location, url).toString();
  }
  throw new Error('too many redirects');
}

/** What a web front end does to get an ID token from the provider for a client (code flow, as that client). */
async function idTokenFor(account: string, clientId = CLIENT_ID, secret = CLIENT_SECRET): Promise<string> {
  nextAccount = account;
  const authorize = new URL(`${issuer}/auth`);
  authorize.search = new URLSearchParams({
    client_id: clientId,
    response_type: 'code',
    scope: 'openid email profile',
    redirect_uri: CLIENT_CALLBACK,
    nonce: 'n-1',
    code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    code_challenge_method: 'S256',
  }).toString();
  const landing = await browse(authorize.toString(), CLIENT_CALLBACK);
  const response = await fetch(`${issuer}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${clientId}:${secret}`).toString('base64')}` },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code: landing.searchParams.get('code')!,
      redirect_uri: CLIENT_CALLBACK,
      code_verifier: 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk',
    }),
  });
  const body = (await response.json()) as { id_token?: string };
  if (!body.id_token) throw new Error(`no id_token: ${JSON.stringify(body)}`);
  return body.id_token;
}

const idpToken = (payload: object) => t.app.inject({ method: 'POST', url: '/v1/auth/idp/token', payload });

/** The whole browser sign-in through our redirect routes; returns the final redirect to the front end. */
async function browserSignIn(account: string): Promise<{ location: URL; cookies: Array<{ name: string; value: string }> }> {
  nextAccount = account;
  const start = await t.app.inject({ method: 'GET', url: '/v1/auth/idp' });
  expect(start.statusCode).toBe(302);
  const flow = start.cookies.find((c) => c.name === 'idp_flow')!;
  const back = await browse(start.headers.location as string, APP_CALLBACK);
  const callback = await t.app.inject({ method: 'GET', url: back.pathname + back.search, cookies: { idp_flow: flow.value } });
  expect(callback.statusCode).toBe(302);
  return { location: new URL(callback.headers.location as string), cookies: callback.cookies };
}

describe('GET /v1/auth/config', () => {
  it('names the client id when sign-in with the identity provider is configured', async () => {
    expect(json(await t.app.inject({ method: 'GET', url: '/v1/auth/config' }))).toEqual({ idpClientId: CLIENT_ID });
  });
});

describe('POST /v1/auth/idp/token', () => {
  it('creates an account for a new verified email, with a random password, and signs it in', async () => {
    const email = uniqueEmail('Idp.New');
    const sub = person({ email, verified: true, name: 'Ida Provider' });
    const response = await idpToken({ credential: await idTokenFor(sub) });
    expect(response.statusCode).toBe(200);
    const body = json(response);
    expect(body).toMatchObject({ user: { email: email.toLowerCase(), name: 'Ida Provider', role: 'USER' }, tokenType: 'Bearer', expiresIn: 900 });
    expect(response.cookies.find((c) => c.name === 'rt')?.value).toBe(body.refreshToken);
    expect((await t.app.inject({ method: 'GET', url: '/v1/users/me', headers: bearer(body.accessToken) })).statusCode).toBe(200);
    const [row] = await t.platform.db.select().from(users).where(eq(users.id, body.user.id));
    expect(row).toMatchObject({ emailVerified: true });
    expect(row!.passwordHash).toMatch(/^\$argon2id\$/);
    const [link] = await t.platform.db.select().from(userIdentities).where(eq(userIdentities.userId, body.user.id));
    expect(link).toMatchObject({ issuer, subject: sub, email: email.toLowerCase() });
    // signing in again finds the same account
    expect(json(await idpToken({ idToken: await idTokenFor(sub) })).user.id).toBe(body.user.id);
  });

  it('links an existing account with the same email and marks the email verified', async () => {
    const existing = await signUp(t.app);
    const sub = person({ email: existing.email.toUpperCase(), verified: true });
    const response = await idpToken({ idToken: await idTokenFor(sub) });
    expect(response.statusCode).toBe(200);
    expect(json(response).user.id).toBe(existing.user.id);
    const [row] = await t.platform.db.select().from(users).where(eq(users.id, existing.user.id));
    expect(row!.emailVerified).toBe(true);
    // the password still works
    expect((await t.app.inject({ method: 'POST', url: '/v1/auth/login', payload: { email: existing.email, password: existing.password } })).statusCode).toBe(
      200,
    );
  });

  it('401 for a token minted for another client, a tampered token, an expired one or an unverified email', async () => {
    const sub = person({ email: uniqueEmail('idp.other'), verified: true });
    const foreign = await idpToken({ idToken: await idTokenFor(sub, OTHER_CLIENT_ID, OTHER_SECRET) });
    expect(foreign.statusCode).toBe(401);
    expect(json(foreign).error.code).toBe('UNAUTHORIZED');

    const good = await idTokenFor(sub);
    const [header, payload, signature] = good.split('.');
    const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString());
    const forged = `${header}.${Buffer.from(JSON.stringify({ ...claims, email: 'victim@example.com' })).toString('base64url')}.${signature}`;
    expect((await idpToken({ idToken: forged })).statusCode).toBe(401);
    expect((await idpToken({ idToken: 'not.a.token' })).statusCode).toBe(401);

    const unverified = person({ email: uniqueEmail('idp.unverified'), verified: false });
    const refused = await idpToken({ idToken: await idTokenFor(unverified) });
    expect(refused.statusCode).toBe(401);
    expect(json(refused).error.message).toMatch(/not verified/);

    t.clock.advance(2 * HOUR_MS);
    try {
      expect((await idpToken({ idToken: good })).statusCode).toBe(401);
    } finally {
      t.clock.set(new Date());
    }
  });

  it('400 without exactly one of credential and idToken, or with unknown fields', async () => {
    for (const payload of [{}, { credential: 'a', idToken: 'b' }, { token: 'x' }, { credential: '' }, { idToken: 5 }]) {
      const response = await idpToken(payload);
      expect(response.statusCode).toBe(400);
      expect(json(response).error.code).toBe('BAD_REQUEST');
    }
  });
});

describe('identity-provider sign-in at the service’s own addresses', () => {
  /** What an attacker's sign-in must not leave: a new account, a link or a session. */
  const footprint = async () => ({
    users: await t.platform.db.$count(users),
    links: await t.platform.db.$count(userIdentities),
    sessions: await t.platform.db.$count(sessions),
  });

  it.each([
    'playground@storefront.internal',
    'PLAYGROUND@Storefront.Internal',
    'playground@storefront.internal.',
    'playground@ＳＴＯＲＥＦＲＯＮＴ．internal',
    'playground@ſtorefront.internal',
    'ops@eu.storefront.internal',
  ])('a provider vouching for %s gets 400 and no account, link or session', async (email) => {
    const before = await footprint();
    const sub = person({ email, verified: true, name: 'Squatter' });
    const response = await idpToken({ credential: await idTokenFor(sub) });
    expect(response.statusCode).toBe(400);
    expect(json(response).error).toEqual({
      code: 'BAD_REQUEST',
      message: expect.stringMatching(/storefront\.internal .*your own email address/),
      details: { field: 'credential', reason: 'email_reserved' },
    });
    expect(response.cookies.find((c) => c.name === 'rt')).toBeUndefined();
    expect(await footprint()).toEqual(before);
    expect(await t.platform.db.select().from(userIdentities).where(eq(userIdentities.subject, sub))).toEqual([]);
  });

  it('the browser flow sends it back with ?error=email_reserved and creates nothing', async () => {
    const before = await footprint();
    const { location, cookies } = await browserSignIn(person({ email: 'playground@storefront.internal', verified: true }));
    expect(location.searchParams.get('error')).toBe('email_reserved');
    expect(location.hash).toBe('');
    expect(cookies.find((c) => c.name === 'rt')).toBeUndefined();
    expect(await footprint()).toEqual(before);
  });

  it('a provider account linked to the internal account (before this fix) signs nobody in', async () => {
    const internalId = await t.services.playground.identityId();
    const sub = person({ email: uniqueEmail('old.link'), verified: true });
    await t.platform.db
      .insert(userIdentities)
      .values({ userId: internalId, issuer, subject: sub, email: 'playground@storefront.internal', createdAt: new Date() });
    const before = await footprint();
    const response = await idpToken({ credential: await idTokenFor(sub) });
    expect(response.statusCode).toBe(401);
    expect(json(response).error).toMatchObject({ code: 'UNAUTHORIZED', message: expect.stringContaining("service's own accounts") });
    expect(await footprint()).toEqual(before);
    expect(await t.platform.db.select().from(sessions).where(eq(sessions.userId, internalId))).toEqual([]);
  });
});

describe('GET /v1/auth/idp and /v1/auth/idp/callback', () => {
  it('redirects to the provider with the authorization-code flow, PKCE (S256), state and nonce', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/v1/auth/idp' });
    expect(response.statusCode).toBe(302);
    const location = new URL(response.headers.location as string);
    expect(`${location.origin}${location.pathname}`).toBe(`${issuer}/auth`);
    expect(Object.fromEntries(location.searchParams)).toMatchObject({
      response_type: 'code',
      client_id: CLIENT_ID,
      redirect_uri: APP_CALLBACK,
      scope: 'openid email profile',
      code_challenge_method: 'S256',
      state: expect.any(String),
      nonce: expect.any(String),
      code_challenge: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
    });
    const cookie = response.cookies.find((c) => c.name === 'idp_flow');
    expect(cookie).toMatchObject({ httpOnly: true, path: '/v1/auth/idp', sameSite: 'Lax', maxAge: 600 });
    expect(cookie!.value).not.toContain(location.searchParams.get('code_challenge')!);
  });

  it('a full browser sign-in lands on {frontend}/auth/callback#access_token=... with the rt cookie', async () => {
    const email = uniqueEmail('browser');
    const sub = person({ email, verified: true, name: 'Bea Browser' });
    const { location, cookies } = await browserSignIn(sub);
    expect(`${location.origin}${location.pathname}`).toBe(`${FRONTEND}/auth/callback`);
    expect(location.search).toBe('');
    const accessToken = new URLSearchParams(location.hash.slice(1)).get('access_token')!;
    expect([...new URLSearchParams(location.hash.slice(1)).keys()]).toEqual(['access_token']);
    const me = json(await t.app.inject({ method: 'GET', url: '/v1/users/me', headers: bearer(accessToken) }));
    expect(me.user).toMatchObject({ email: email.toLowerCase(), name: 'Bea Browser' });
    const rt = cookies.find((c) => c.name === 'rt')!;
    expect(rt).toMatchObject({ httpOnly: true, path: '/v1/auth' });
    expect((await t.app.inject({ method: 'POST', url: '/v1/auth/refresh', cookies: { rt: rt.value } })).statusCode).toBe(200);
    expect(cookies.find((c) => c.name === 'idp_flow')?.value).toBe('');
  });

  it('redirects with ?error=<reason> on failures: bad state, no flow cookie, provider error, unverified email', async () => {
    const start = await t.app.inject({ method: 'GET', url: '/v1/auth/idp' });
    const flow = start.cookies.find((c) => c.name === 'idp_flow')!.value;
    const errorOf = (response: { statusCode: number; headers: Record<string, unknown> }) => {
      expect(response.statusCode).toBe(302);
      const url = new URL(response.headers.location as string);
      expect(`${url.origin}${url.pathname}`).toBe(`${FRONTEND}/auth/callback`);
      return url.searchParams.get('error');
    };
    expect(errorOf(await t.app.inject({ method: 'GET', url: '/v1/auth/idp/callback?code=abc&state=wrong', cookies: { idp_flow: flow } }))).toBe(
      'invalid_state',
    );
    expect(errorOf(await t.app.inject({ method: 'GET', url: '/v1/auth/idp/callback?code=abc&state=x' }))).toBe('session_expired');
    expect(errorOf(await t.app.inject({ method: 'GET', url: '/v1/auth/idp/callback?error=access_denied&state=x', cookies: { idp_flow: flow } }))).toBe(
      'access_denied',
    );
    const state = new URL(start.headers.location as string).searchParams.get('state')!;
    expect(errorOf(await t.app.inject({ method: 'GET', url: `/v1/auth/idp/callback?code=forged-code&state=${state}`, cookies: { idp_flow: flow } }))).toBe(
      'token_exchange_failed',
    );

    const unverified = person({ email: uniqueEmail('browser.unverified'), verified: false });
    expect(new URL((await browserSignIn(unverified)).location).searchParams.get('error')).toBe('email_not_verified');
  });

  it('the flow cookie expires after 10 minutes', async () => {
    const sub = person({ email: uniqueEmail('slow'), verified: true });
    nextAccount = sub;
    const start = await t.app.inject({ method: 'GET', url: '/v1/auth/idp' });
    const flow = start.cookies.find((c) => c.name === 'idp_flow')!.value;
    const back = await browse(start.headers.location as string, APP_CALLBACK);
    t.clock.advance(11 * 60_000);
    try {
      const late = await t.app.inject({ method: 'GET', url: back.pathname + back.search, cookies: { idp_flow: flow } });
      expect(new URL(late.headers.location as string).searchParams.get('error')).toBe('session_expired');
    } finally {
      t.clock.set(new Date());
    }
  });
});

describe('identity-provider sign-in when not configured', () => {
  it('answers 503 IDENTITY_SIGNIN_DISABLED and the config has no client id', async () => {
    const plain = await createTestApp();
    try {
      expect(json(await plain.app.inject({ method: 'GET', url: '/v1/auth/config' }))).toEqual({ idpClientId: null });
      for (const request of [
        { method: 'POST' as const, url: '/v1/auth/idp/token', payload: { idToken: 'x' } },
        { method: 'GET' as const, url: '/v1/auth/idp' },
        { method: 'GET' as const, url: '/v1/auth/idp/callback?code=a&state=b' },
      ]) {
        const response = await plain.app.inject(request);
        expect(response.statusCode).toBe(503);
        expect(json(response).error.code).toBe('IDENTITY_SIGNIN_DISABLED');
      }
    } finally {
      await plain.close();
    }
  });

  it('without the client secret the ID-token route works but the redirect flow is off', async () => {
    const tokenOnly = await createTestApp({ env: { IDP_ISSUER: issuer, IDP_CLIENT_ID: CLIENT_ID } });
    try {
      expect(json(await tokenOnly.app.inject({ method: 'GET', url: '/v1/auth/config' }))).toEqual({ idpClientId: CLIENT_ID });
      expect((await tokenOnly.app.inject({ method: 'GET', url: '/v1/auth/idp' })).statusCode).toBe(503);
      const sub = person({ email: uniqueEmail('token.only'), verified: true });
      expect((await tokenOnly.app.inject({ method: 'POST', url: '/v1/auth/idp/token', payload: { idToken: await idTokenFor(sub) } })).statusCode).toBe(200);
    } finally {
      await tokenOnly.close();
    }
  });
});
