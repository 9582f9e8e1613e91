import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Ok, errorResponses } from '../../platform/http/schemas.js';
import { clientInfo } from '../../platform/http/client-info.js';
import { looksLikeJwt } from '../../platform/auth/access-tokens.js';
import { unauthorized } from '../../platform/http/errors.js';
import { COOKIE_PATH, REFRESH_COOKIE } from './cookies.js';
import type { AuthService } from './service.js';
import { REFRESH_TOKEN_TTL_MS } from './sessions.js';
import { AuthConfig, LoginBody, MfaChallenge, RefreshBody, SignupBody, TokenBundle, TokenPair, TwoFactorVerifyBody } from './schemas.js';

export interface AuthRoutesOptions {
  auth: AuthService;
  secureCookies: boolean;
  idpClientId: string | null;
}

export const authRoutes: FastifyPluginAsyncTypebox<AuthRoutesOptions> = async (app, { auth, secureCookies, idpClientId }) => {
  const setRefreshCookie = (reply: FastifyReply, token: string) =>
    reply.setCookie(REFRESH_COOKIE, token, {
      httpOnly: true,
      sameSite: 'lax',
      secure: secureCookies,
      path: COOKIE_PATH,
      maxAge: REFRESH_TOKEN_TTL_MS / 1000,
    });

  const presentedRefreshToken = (request: FastifyRequest): string => {
    const body = request.body as { refreshToken?: string } | undefined;
    const token = body?.refreshToken ?? request.cookies[REFRESH_COOKIE];
    if (!token) throw unauthorized('Missing refresh token. Send { "refreshToken": "..." } or the rt cookie.');
    // A refresh token is opaque; a JWT here is the access token sent by mistake, and a logout that ignored it would
    // leave the session open.
    if (looksLikeJwt(token))
      throw unauthorized(
        'This is an access token, not a refresh token. Send the refreshToken you got at sign-in (or from the last refresh), or the rt cookie.',
      );
    return token;
  };

  const tags = ['auth'];

  app.get('/v1/auth/config', { schema: { tags, summary: 'Sign-in options', response: { 200: AuthConfig } } }, async () => ({
    idpClientId,
  }));

  app.post(
    '/v1/auth/signup',
    { schema: { tags, summary: 'Create an account', body: SignupBody, response: { 201: TokenBundle, ...errorResponses(400, 409) } } },
    async (request, reply) => {
      const bundle = await auth.signup(request.body, clientInfo(request));
      setRefreshCookie(reply, bundle.refreshToken);
      return reply.code(201).send(bundle);
    },
  );

  app.post(
    '/v1/auth/login',
    {
      schema: {
        tags,
        summary: 'Sign in with email and password',
        description: 'With two-factor on, answers 402 with a challenge token to send with a code to POST /v1/auth/2fa/verify.',
        body: LoginBody,
        response: { 200: TokenBundle, 402: MfaChallenge, ...errorResponses(400, 401, 429) },
      },
    },
    async (request, reply) => {
      const outcome = await auth.login(request.body, clientInfo(request));
      if ('mfaRequired' in outcome) return reply.code(402).send(outcome);
      setRefreshCookie(reply, outcome.refreshToken);
      return reply.send(outcome);
    },
  );

  app.post(
    '/v1/auth/2fa/verify',
    {
      schema: {
        tags,
        summary: 'Complete a two-factor sign-in with an authenticator or recovery code',
        body: TwoFactorVerifyBody,
        response: { 200: TokenBundle, ...errorResponses(400, 401, 429) },
      },
    },
    async (request, reply) => {
      const bundle = await auth.verifyTwoFactor(request.body, clientInfo(request));
      setRefreshCookie(reply, bundle.refreshToken);
      return bundle;
    },
  );

  app.post(
    '/v1/auth/refresh',
    {
      schema: {
        tags,
        summary: 'Rotate the refresh token and get a new access token',
        body: RefreshBody,
        response: { 200: TokenPair, ...errorResponses(400, 401) },
      },
    },
    async (request, reply) => {
      const pair = await auth.refresh(presentedRefreshToken(request), clientInfo(request));
      setRefreshCookie(reply, pair.refreshToken);
      return pair;
    },
  );

  app.post(
    '/v1/auth/logout',
    { schema: { tags, summary: 'End this session', body: RefreshBody, response: { 200: Ok, ...errorResponses(400, 401) } } },
    async (request, reply) => {
      await auth.logout(presentedRefreshToken(request), clientInfo(request));
      reply.clearCookie(REFRESH_COOKIE, { path: COOKIE_PATH, httpOnly: true, sameSite: 'lax', secure: secureCookies });
      return { ok: true as const };
    },
  );
};
