import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Fastify, { type FastifyInstance } from 'fastify';
import { ManualClock } from '../clock/clock.js';
import { registerErrorHandling } from '../http/error-handler.js';
import { createAccessTokens } from './access-tokens.js';
import { authPlugin, type Principal } from './plugin.js';

// Verified tokens are kept per instance until their `exp`: the signature is checked once, the expiry and the
// session on every use.
const SECRET = 'access-tokens-test-secret-long-enough-for-hs256';

describe('verified access tokens', () => {
  it('answers a token again from the cache until its exp, then refuses it', async () => {
    const clock = new ManualClock(new Date('2026-03-01T10:00:00.500Z'));
    const tokens = createAccessTokens(SECRET, clock);
    const token = await tokens.sign({ sub: 'u1', kind: 'access', role: 'USER', sid: 's1' }, 60);
    const first = await tokens.verify(token, 'access');
    expect(first).toMatchObject({ sub: 'u1', kind: 'access', role: 'USER', sid: 's1' });
    clock.advance(59_000);
    expect(await tokens.verify(token, 'access')).toEqual(first);
    // Expired at the second its exp names (as jose decides), although it was cached.
    clock.advance(1_000);
    expect(await tokens.verify(token, 'access')).toBeNull();
    expect(await tokens.verify(token, 'access')).toBeNull();
  });

  it('still checks the kind of a cached token', async () => {
    const tokens = createAccessTokens(SECRET, new ManualClock());
    const challenge = await tokens.sign({ sub: 'u1', kind: 'mfa_challenge' }, 300);
    expect(await tokens.verify(challenge, 'mfa_challenge')).toMatchObject({ sub: 'u1', kind: 'mfa_challenge' });
    expect(await tokens.verify(challenge, 'access')).toBeNull();
    const access = await tokens.sign({ sub: 'u1', kind: 'access', role: 'ADMIN' }, 300);
    expect(await tokens.verify(access, 'access')).toMatchObject({ role: 'ADMIN' });
    expect(await tokens.verify(access, 'mfa_challenge')).toBeNull();
  });

  it('refuses a tampered copy of a cached token, and a token of another secret', async () => {
    const clock = new ManualClock();
    const tokens = createAccessTokens(SECRET, clock);
    const token = await tokens.sign({ sub: 'u1', kind: 'access', role: 'USER' }, 300);
    expect(await tokens.verify(token, 'access')).not.toBeNull();
    const [header, payload, signature] = token.split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as Record<string, unknown>;
    const elevated = Buffer.from(JSON.stringify({ ...claims, role: 'SUPER_ADMIN' })).toString('base64url');
    expect(await tokens.verify(`${header}.${elevated}.${signature}`, 'access')).toBeNull();
    const foreign = await createAccessTokens(`${SECRET}-other`, clock).sign({ sub: 'u1', kind: 'access', role: 'USER' }, 300);
    expect(await tokens.verify(foreign, 'access')).toBeNull();
  });

  it('keeps at most the given number of tokens and verifies the ones it dropped again', async () => {
    const tokens = createAccessTokens(SECRET, new ManualClock(), { maxCached: 2 });
    const signed = await Promise.all(['a', 'b', 'c', 'd'].map((sub) => tokens.sign({ sub, kind: 'access', role: 'USER' }, 300)));
    for (let round = 0; round < 2; round++) {
      for (const [i, token] of signed.entries()) expect(await tokens.verify(token, 'access')).toMatchObject({ sub: ['a', 'b', 'c', 'd'][i] });
    }
  });
});

describe('the auth plugin with cached tokens', () => {
  const clock = new ManualClock();
  const tokens = createAccessTokens(SECRET, clock);
  const open = new Set<string>();
  let app: FastifyInstance;

  beforeAll(async () => {
    app = Fastify();
    registerErrorHandling(app);
    await app.register(authPlugin, { tokens, sessionOpen: async (sid) => open.has(sid) });
    app.get('/private', { config: { auth: 'required' } }, async (request: { principal: Principal | null }) => ({ principal: request.principal }));
    await app.ready();
  });
  afterAll(async () => app?.close());

  const get = (token: string) => app.inject({ method: 'GET', url: '/private', headers: { authorization: `Bearer ${token}` } });

  it('refuses the token of a revoked session at once, although the token was verified before', async () => {
    open.add('s-revoked');
    const token = await tokens.sign({ sub: 'u1', kind: 'access', role: 'USER', sid: 's-revoked' }, 900);
    expect((await get(token)).statusCode).toBe(200);
    expect((await get(token)).statusCode).toBe(200);
    open.delete('s-revoked');
    const refused = await get(token);
    expect(refused.statusCode).toBe(401);
    expect(refused.json().error.message).toBe('This session was signed out. Sign in again.');
  });

  it('refuses a cached token once it expired', async () => {
    open.add('s-expiring');
    const token = await tokens.sign({ sub: 'u1', kind: 'access', role: 'USER', sid: 's-expiring' }, 900);
    expect((await get(token)).json().principal).toMatchObject({ userId: 'u1', sessionId: 's-expiring' });
    clock.advance(900_000);
    const refused = await get(token);
    expect(refused.statusCode).toBe(401);
    expect(refused.json().error.message).toMatch(/invalid or has expired/);
  });
});
