import fp from 'fastify-plugin';
import type { FastifyRequest } from 'fastify';
import { AppError, forbidden, unauthorized } from '../http/errors.js';
import type { AccessTokens, Role } from './access-tokens.js';
import { impersonationRefusal } from './impersonation.js';

/** Who is calling: a user through an access token, or through one of their API keys. */
export interface Principal {
  userId: string;
  role: Role;
  sessionId: string | null;
  via: 'access_token' | 'api_key';
  /** null means every scope (access tokens); an API key has only the scopes it was granted. */
  scopes: string[] | null;
  apiKeyId: string | null;
  /** The operator acting as this user through an impersonation token (`act.sub`); absent or null otherwise. */
  impersonatorId?: string | null;
  /** An API key's own controls; absent or null for access tokens and keys without any. */
  keyControls?: KeyControls | null;
}

/** What an API key's owner set on it: a token budget per period, a request rate, the models it may call. */
export interface KeyControls {
  budget: { tokens: number; period: 'day' | 'month' | 'total' } | null;
  requestsPerMinute: number | null;
  /** Model slugs; null = every model of the plan. */
  allowedModels: string[] | null;
}

export interface RouteAuth {
  /** `required`: a valid credential or 401; `optional`: decoded when present, never required; default `none`. */
  auth?: 'none' | 'optional' | 'required';
  roles?: Role[];
  /** The scope an API key needs; routes with a scope also accept API keys. `*` takes any key, whatever its scopes. */
  scope?: string;
  /** A header that may carry the API key instead of `Authorization: Bearer` (Anthropic's clients send `x-api-key`). */
  apiKeyHeader?: string;
  /** A query parameter that may carry the API key (Google's clients may send `?key=`). */
  apiKeyQuery?: string;
}

export interface ApiKeyVerifier {
  looksLikeApiKey(token: string): boolean;
  /** Resolves the key's principal; throws 401 for an unknown, revoked or expired key. */
  verify(rawKey: string): Promise<Principal>;
}

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
  }
  interface FastifyContextConfig extends RouteAuth {}
}

export interface AuthPluginOptions {
  tokens: AccessTokens;
  apiKeys?: ApiKeyVerifier;
  /** Whether the session an access token belongs to is still open; without it, tokens live out their lifetime. */
  sessionOpen?: (sessionId: string) => Promise<boolean>;
}

const BEARER = /^Bearer\s+(\S+)\s*$/i;
/** The OpenAPI security scheme of a key header (see `openapi.ts`): Anthropic's `x-api-key` or Google's `x-goog-api-key`. */
const headerScheme = (header: string) => (header === 'x-goog-api-key' ? 'googApiKeyHeaderAuth' : 'apiKeyHeaderAuth');

/** Reads the Bearer credential of every request and enforces each route's `config.auth`, `roles` and `scope`. */
export const authPlugin = fp<AuthPluginOptions>(
  async (app, { tokens, apiKeys, sessionOpen }) => {
    app.decorateRequest('principal', null);

    app.addHook('onRoute', (route) => {
      const config = (route.config ?? {}) as RouteAuth;
      if (config.auth === 'required' || config.auth === 'optional') {
        route.schema ??= {};
        // A route with a scope also takes API keys; optional auth lists the anonymous alternative `{}`.
        const keyElsewhere = [
          ...(config.apiKeyHeader ? [{ [headerScheme(config.apiKeyHeader)]: [] }] : []),
          ...(config.apiKeyQuery ? [{ apiKeyQueryAuth: [] }] : []),
        ];
        const schemes = config.scope ? [{ bearerAuth: [] }, { apiKeyAuth: [] }, ...keyElsewhere] : [{ bearerAuth: [] }];
        (route.schema as Record<string, unknown>).security = config.auth === 'required' ? schemes : [...schemes, {}];
        // The roles a route needs, machine-readable for clients and for the generated admin role matrix test.
        if (config.roles) (route.schema as Record<string, unknown>)['x-roles'] = [...config.roles];
      }
    });

    app.addHook('onRequest', async (request) => {
      const config = request.routeOptions.config as RouteAuth;
      const mode = config.auth ?? 'none';
      if (mode === 'none') return;
      const token = bearerToken(request) ?? headerKey(request, config.apiKeyHeader) ?? queryKey(request, config.apiKeyQuery);
      if (!token) {
        if (mode === 'required') throw unauthorized('Missing access token. Send it as "Authorization: Bearer <token>".');
        return;
      }
      const started = performance.now();
      try {
        request.principal = await resolvePrincipal(token, config);
      } catch (err) {
        // An optional-auth route treats a stale or invalid credential as an anonymous visit.
        if (mode === 'optional' && err instanceof AppError && err.statusCode === 401) return;
        throw err;
      } finally {
        // Server-Timing `auth`: the credential's check (a cached API key costs microseconds, a cold one a query).
        request.timing?.add('auth', performance.now() - started);
      }
      // Checked before the role and scope, so an operator learns the token is the reason, whatever the route needs.
      if (request.principal?.impersonatorId) {
        const refusal = impersonationRefusal(request.method, request.routeOptions.url ?? request.url);
        if (refusal) throw refusal;
      }
      authorize(request.principal, config);
    });

    async function resolvePrincipal(token: string, config: RouteAuth): Promise<Principal> {
      if (apiKeys?.looksLikeApiKey(token)) {
        if (!config.scope) throw unauthorized('API keys are accepted only on /v1/ai/* routes. Use an access token here.');
        return apiKeys.verify(token);
      }
      const claims = await tokens.verify(token, 'access');
      if (!claims?.role) throw unauthorized('The access token is invalid or has expired. Refresh it and try again.');
      if (claims.sid && sessionOpen && !(await sessionOpen(claims.sid))) throw unauthorized('This session was signed out. Sign in again.');
      return {
        userId: claims.sub,
        role: claims.role,
        sessionId: claims.sid ?? null,
        via: 'access_token',
        scopes: null,
        apiKeyId: null,
        impersonatorId: claims.act?.sub ?? null,
      };
    }
  },
  { name: 'auth' },
);

function authorize(principal: Principal | null, config: RouteAuth): void {
  if (!principal) throw unauthorized();
  if (config.roles && !config.roles.includes(principal.role)) {
    throw forbidden(`This needs the ${config.roles.join(' or ')} role.`);
  }
  if (config.scope && config.scope !== '*' && principal.scopes && !principal.scopes.includes(config.scope)) {
    throw forbidden(`This API key lacks the "${config.scope}" scope.`, { requiredScope: config.scope });
  }
}

function bearerToken(request: FastifyRequest): string | null {
  const header = request.headers.authorization;
  if (!header) return null;
  const match = BEARER.exec(header);
  if (!match) throw unauthorized('Malformed Authorization header. Use "Authorization: Bearer <token>".');
  return match[1]!;
}

function headerKey(request: FastifyRequest, header: string | undefined): string | null {
  const value = header ? request.headers[header] : undefined;
  return typeof value === 'string' && value.trim() ? value.trim() : null;
}

function queryKey(request: FastifyRequest, name: string | undefined): string | null {
  const value = name ? (request.query as Record<string, unknown> | undefined)?.[name] : undefined;
  return typeof value === 'string' && value.trim() ? value.trim() : null;
}

/** The principal of a route declared `auth: 'required'`. */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new AppError(500, 'INTERNAL', 'Route used principalOf without auth: required.');
  return request.principal;
}
