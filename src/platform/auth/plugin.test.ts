import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Fastify, { type FastifyInstance } from 'fastify';
import { ManualClock } from '../clock/clock.js';
import { registerErrorHandling } from '../http/error-handler.js';
import { AppError } from '../http/errors.js';
import { createAccessTokens } from './access-tokens.js';
import { authPlugin, type Principal } from './plugin.js';

// The plugin on a small app with real signed tokens and a real (in-test) API key verifier.
const clock = new ManualClock();
const tokens = createAccessTokens('plugin-test-secret-long-enough-for-hs256', clock);
let app: FastifyInstance;
const KEY = 'sk_test_valid';

beforeAll(async () => {
  app = Fastify();
  registerErrorHandling(app);
  await app.register(authPlugin, {
    tokens,
    apiKeys: {
      looksLikeApiKey: (token) => token.startsWith('sk_test_'),
      verify: async (raw): Promise<Principal> => {
        if (raw !== KEY) throw new AppError(401, 'UNAUTHORIZED', 'This API key is revoked or expired.');
        return { userId: 'u-key', role: 'USER', sessionId: null, via: 'api_key', scopes: ['ai:text'], apiKeyId: 'k1' };
      },
    },
  });
  const echo = async (request: { principal: Principal | null }) => ({ principal: request.principal });
  app.get('/open', echo);
  app.get('/optional', { config: { auth: 'optional' } }, echo);
  app.get('/private', { config: { auth: 'required' } }, echo);
  app.get('/admin', { config: { auth: 'required', roles: ['ADMIN', 'SUPER_ADMIN'] } }, echo);
  app.post('/ai/text', { config: { auth: 'required', scope: 'ai:text' } }, echo);
  app.post('/ai/video', { config: { auth: 'required', scope: 'ai:video' } }, echo);
  await app.ready();
});
afterAll(async () => app?.close());

const token = (role: 'USER' | 'ADMIN' | 'SUPER_ADMIN' = 'USER', kind: 'access' | 'mfa_challenge' = 'access') =>
  tokens.sign({ sub: 'u1', kind, role, sid: 's1' }, 900);
const get = (url: string, authorization?: string, method: 'GET' | 'POST' = 'GET') =>
  app.inject({ method, url, headers: authorization ? { authorization } : {} });

describe('auth plugin', () => {
  it('leaves routes without auth config alone', async () => {
    expect((await get('/open', 'Bearer garbage')).json()).toEqual({ principal: null });
  });

  it('decodes a token on optional routes and treats a bad one as anonymous', async () => {
    expect((await get('/optional')).json()).toEqual({ principal: null });
    expect((await get('/optional', `Bearer ${await token()}`)).json().principal).toMatchObject({
      userId: 'u1',
      role: 'USER',
      sessionId: 's1',
      via: 'access_token',
    });
    expect((await get('/optional', 'Bearer expired.or.bad')).json()).toEqual({ principal: null });
  });

  it('requires a valid access token on required routes', async () => {
    expect((await get('/private')).statusCode).toBe(401);
    expect((await get('/private', `Bearer ${await token()}`)).statusCode).toBe(200);
  });

  it('refuses a 2FA challenge token as a Bearer token', async () => {
    const response = await get('/private', `Bearer ${await token('USER', 'mfa_challenge')}`);
    expect(response.statusCode).toBe(401);
  });

  it('enforces roles with 403', async () => {
    const response = await get('/admin', `Bearer ${await token('USER')}`);
    expect(response.statusCode).toBe(403);
    expect(response.json().error).toMatchObject({ code: 'FORBIDDEN', message: 'This needs the ADMIN or SUPER_ADMIN role.' });
    expect((await get('/admin', `Bearer ${await token('ADMIN')}`)).statusCode).toBe(200);
    expect((await get('/admin', `Bearer ${await token('SUPER_ADMIN')}`)).statusCode).toBe(200);
  });

  it('accepts API keys only on scoped routes, and only with that scope', async () => {
    expect((await get('/ai/text', `Bearer ${KEY}`, 'POST')).json().principal).toMatchObject({ via: 'api_key', scopes: ['ai:text'] });
    const missingScope = await get('/ai/video', `Bearer ${KEY}`, 'POST');
    expect(missingScope.statusCode).toBe(403);
    expect(missingScope.json().error.message).toContain('"ai:video"');
    const onUserRoute = await get('/private', `Bearer ${KEY}`);
    expect(onUserRoute.statusCode).toBe(401);
    expect(onUserRoute.json().error.message).toMatch(/only on \/v1\/ai/);
    expect((await get('/ai/text', 'Bearer sk_test_revoked', 'POST')).statusCode).toBe(401);
    // a user's access token has every scope
    expect((await get('/ai/video', `Bearer ${await token()}`, 'POST')).statusCode).toBe(200);
  });
});
