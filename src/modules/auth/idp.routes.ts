import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import { Type } from 'typebox';
import type { Clock } from '../../platform/clock/clock.js';
import { AppError, badRequest } from '../../platform/http/errors.js';
import { StrictObject, errorResponses } from '../../platform/http/schemas.js';
import { IdpFailure, idpFailureToHttp, signinDisabled, type IdentityProvider } from './idp.js';
import { clientInfo } from '../../platform/http/client-info.js';
import { COOKIE_PATH, REFRESH_COOKIE } from './cookies.js';
import { TokenBundle } from './schemas.js';
import { sameDigest } from '../../platform/crypto/secrets.js';
import type { AuthService } from './service.js';
import { REFRESH_TOKEN_TTL_MS } from './sessions.js';

export interface IdpRoutesOptions {
  auth: AuthService;
  idp: IdentityProvider;
  clock: Clock;
  publicBaseUrl: string;
  frontendUrl: string;
  secureCookies: boolean;
}

/** The browser flow's state, nonce and PKCE verifier travel in this httpOnly cookie between the redirect and the callback. */
const FLOW_COOKIE = 'idp_flow';
const FLOW_COOKIE_PATH = '/v1/auth/idp';
const FLOW_TTL_SECONDS = 10 * 60;

const IdTokenBody = StrictObject({
  credential: Type.Optional(Type.String({ minLength: 1, maxLength: 8192, description: 'The ID token (as Google Identity Services names it)' })),
  idToken: Type.Optional(Type.String({ minLength: 1, maxLength: 8192 })),
});

const CallbackQuery = Type.Object(
  {
    code: Type.Optional(Type.String({ maxLength: 2048 })),
    state: Type.Optional(Type.String({ maxLength: 512 })),
    error: Type.Optional(Type.String({ maxLength: 256 })),
    error_description: Type.Optional(Type.String({ maxLength: 2048 })),
  },
  // Providers may add parameters of their own (iss, session_state, scope ...).
  { additionalProperties: true },
);

const Redirect = Type.Null({ description: 'A 302 redirect' });

interface Flow {
  state: string;
  nonce: string;
  verifier: string;
  exp: number;
}

function readFlow(raw: string | undefined): Flow | null {
  if (!raw) return null;
  try {
    const flow = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')) as Partial<Flow>;
    if (typeof flow.state === 'string' && typeof flow.nonce === 'string' && typeof flow.verifier === 'string' && typeof flow.exp === 'number') {
      return flow as Flow;
    }
  } catch {
    // a damaged cookie is treated as missing
  }
  return null;
}

export const idpRoutes: FastifyPluginAsyncTypebox<IdpRoutesOptions> = async (app, options) => {
  const { auth, idp, clock, secureCookies } = options;
  const tags = ['auth'];
  const redirectUri = `${options.publicBaseUrl}/v1/auth/idp/callback`;
  const callbackPage = `${options.frontendUrl}/auth/callback`;
  const cookieOptions = { httpOnly: true, sameSite: 'lax' as const, secure: secureCookies };

  const failTo = (reply: FastifyReply, reason: string) => {
    reply.clearCookie(FLOW_COOKIE, { ...cookieOptions, path: FLOW_COOKIE_PATH });
    return reply.redirect(`${callbackPage}?error=${encodeURIComponent(reason)}`, 302);
  };

  app.post(
    '/v1/auth/idp/token',
    {
      schema: {
        tags,
        summary: 'Sign in with an ID token from the identity provider',
        description: "Send { credential } or { idToken }. The token must be issued for this service's client id.",
        body: IdTokenBody,
        response: { 200: TokenBundle, ...errorResponses(400, 401, 503) },
      },
    },
    async (request, reply) => {
      if (!idp.clientId) throw signinDisabled();
      const { credential, idToken } = request.body;
      if ((credential === undefined) === (idToken === undefined)) {
        throw badRequest('Send the identity provider\'s ID token as either "credential" or "idToken" (exactly one of them).', [
          { field: 'credential', message: 'or idToken is required' },
        ]);
      }
      const bundle = await idp
        .verifyIdToken((credential ?? idToken)!)
        .then((identity) => auth.signInWithIdentity(identity, clientInfo(request)))
        .catch((err: unknown) => {
          throw idpFailureToHttp(err);
        });
      reply.setCookie(REFRESH_COOKIE, bundle.refreshToken, { ...cookieOptions, path: COOKIE_PATH, maxAge: REFRESH_TOKEN_TTL_MS / 1000 });
      return bundle;
    },
  );

  app.get(
    '/v1/auth/idp',
    {
      schema: {
        tags,
        summary: 'Start sign-in with the identity provider (browser redirect, authorization code with PKCE)',
        response: { 302: Redirect, ...errorResponses(503) },
      },
    },
    async (_request, reply) => {
      if (!idp.redirectEnabled) throw signinDisabled();
      const { url, flow } = await idp.startAuthorization(redirectUri);
      const value: Flow = { ...flow, exp: Math.floor(clock.now().getTime() / 1000) + FLOW_TTL_SECONDS };
      reply.setCookie(FLOW_COOKIE, Buffer.from(JSON.stringify(value)).toString('base64url'), {
        ...cookieOptions,
        path: FLOW_COOKIE_PATH,
        maxAge: FLOW_TTL_SECONDS,
      });
      return reply.redirect(url, 302);
    },
  );

  app.get(
    '/v1/auth/idp/callback',
    {
      schema: {
        tags,
        summary: 'Where the identity provider returns; redirects to the web app with the access token',
        description: 'Success: 302 to {frontend}/auth/callback#access_token=...; failure: 302 to {frontend}/auth/callback?error=<reason>.',
        querystring: CallbackQuery,
        response: { 302: Redirect, ...errorResponses(503) },
      },
    },
    async (request, reply) => {
      if (!idp.redirectEnabled) throw signinDisabled();
      const query = request.query;
      const flow = readFlow(request.cookies[FLOW_COOKIE]);
      if (query.error) return failTo(reply, /^[a-z_]{1,64}$/.test(query.error) ? query.error : 'provider_error');
      if (!flow || flow.exp <= Math.floor(clock.now().getTime() / 1000)) return failTo(reply, 'session_expired');
      if (!query.state || !sameDigest(Buffer.from(query.state).toString('hex'), Buffer.from(flow.state).toString('hex'))) {
        return failTo(reply, 'invalid_state');
      }
      if (!query.code) return failTo(reply, 'missing_code');
      try {
        const identity = await idp.completeAuthorization({ code: query.code, verifier: flow.verifier, nonce: flow.nonce, redirectUri });
        const bundle = await auth.signInWithIdentity(identity, clientInfo(request));
        reply.clearCookie(FLOW_COOKIE, { ...cookieOptions, path: FLOW_COOKIE_PATH });
        reply.setCookie(REFRESH_COOKIE, bundle.refreshToken, { ...cookieOptions, path: COOKIE_PATH, maxAge: REFRESH_TOKEN_TTL_MS / 1000 });
        return reply.redirect(`${callbackPage}#access_token=${encodeURIComponent(bundle.accessToken)}`, 302);
      } catch (err) {
        if (err instanceof IdpFailure) return failTo(reply, err.reason);
        if (err instanceof AppError && err.statusCode === 503) return failTo(reply, 'provider_unavailable');
        request.log.error({ err }, 'identity provider sign-in failed');
        return failTo(reply, 'server_error');
      }
    },
  );
};
