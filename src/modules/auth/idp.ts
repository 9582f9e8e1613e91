import { createHash } from 'node:crypto';
import { createRemoteJWKSet, errors as joseErrors, jwtVerify, type JWTPayload } from 'jose';
import type { Clock } from '../../platform/clock/clock.js';
import { AppError, badRequest, unauthorized } from '../../platform/http/errors.js';
import { randomToken } from '../../platform/crypto/secrets.js';
import { RESERVED_EMAIL_DOMAIN, isReservedEmail } from './users.js';

/**
 * OpenID Connect relying party: discovery from the issuer, ID-token verification against the issuer's JWKS (jose),
 * and the authorization-code flow with PKCE (S256), state and nonce. The issuer is operator configuration,
 * so it is fetched directly (no private-network filter).
 */
export interface IdpSettings {
  issuer: string | null;
  clientId: string | null;
  clientSecret: string | null;
}

export interface VerifiedIdentity {
  issuer: string;
  subject: string;
  email: string;
  name: string | null;
}

interface Discovery {
  issuer: string;
  authorization_endpoint: string;
  token_endpoint: string;
  jwks_uri: string;
  token_endpoint_auth_methods_supported?: string[];
}

/**
 * Why an identity-provider sign-in failed; `reason` is what the callback redirect reports. `refused`: the token is
 * good but what it vouches for can have no account here (400 rather than 401 on the ID-token route).
 */
export class IdpFailure extends Error {
  constructor(
    readonly reason: string,
    message: string,
    readonly refused = false,
  ) {
    super(message);
  }
}

const DISCOVERY_TTL_MS = 60 * 60 * 1000;
const HTTP_TIMEOUT_MS = 10_000;
// Asymmetric signatures only: a symmetric (HS*) ID token would be keyed with our own client secret.
const ID_TOKEN_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];

export const signinDisabled = () =>
  new AppError(503, 'IDENTITY_SIGNIN_DISABLED', 'Sign-in with the identity provider is not configured on this service. Sign in with your email and password.');
const providerUnavailable = (detail: string) =>
  new AppError(
    503,
    'IDENTITY_PROVIDER_UNAVAILABLE',
    'The identity provider cannot be reached right now. Try again in a minute, or sign in with your password.',
    {
      reason: detail,
    },
  );

export const pkceChallenge = (verifier: string): string => createHash('sha256').update(verifier).digest('base64url');

export function createIdentityProvider(settings: IdpSettings, deps: { clock: Clock }) {
  const { issuer, clientId, clientSecret } = settings;
  let discovery: { value: Discovery; fetchedAt: number } | null = null;
  let jwks: { uri: string; keys: ReturnType<typeof createRemoteJWKSet> } | null = null;

  async function discover(): Promise<Discovery> {
    if (!issuer) throw signinDisabled();
    const now = deps.clock.now().getTime();
    if (discovery && now - discovery.fetchedAt < DISCOVERY_TTL_MS && now >= discovery.fetchedAt) return discovery.value;
    const url = `${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`;
    let body: Partial<Discovery>;
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(HTTP_TIMEOUT_MS), headers: { accept: 'application/json' } });
      if (!response.ok) throw new Error(`discovery answered ${response.status}`);
      body = (await response.json()) as Partial<Discovery>;
    } catch (err) {
      throw providerUnavailable(err instanceof Error ? err.message : String(err));
    }
    const { authorization_endpoint, token_endpoint, jwks_uri } = body;
    if (typeof body.issuer !== 'string' || !authorization_endpoint || !token_endpoint || !jwks_uri) {
      throw providerUnavailable('the discovery document lacks issuer, authorization_endpoint, token_endpoint or jwks_uri');
    }
    // OpenID Connect Discovery: the document's issuer must be the one configured.
    if (body.issuer.replace(/\/+$/, '') !== issuer.replace(/\/+$/, '')) throw providerUnavailable(`the discovery document names issuer ${body.issuer}`);
    discovery = { value: body as Discovery, fetchedAt: now };
    return discovery.value;
  }

  function keysFor(meta: Discovery) {
    if (!jwks || jwks.uri !== meta.jwks_uri) {
      jwks = { uri: meta.jwks_uri, keys: createRemoteJWKSet(new URL(meta.jwks_uri), { timeoutDuration: HTTP_TIMEOUT_MS }) };
    }
    return jwks.keys;
  }

  async function verifyIdToken(idToken: string, expected: { nonce?: string } = {}): Promise<VerifiedIdentity> {
    if (!issuer || !clientId) throw signinDisabled();
    const meta = await discover();
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(idToken, keysFor(meta), {
        issuer: meta.issuer,
        audience: clientId,
        algorithms: ID_TOKEN_ALGORITHMS,
        currentDate: deps.clock.now(),
        clockTolerance: 60,
        requiredClaims: ['sub', 'exp', 'iat'],
      }));
    } catch (err) {
      if (err instanceof joseErrors.JWKSTimeout) throw providerUnavailable('the key set request timed out');
      if (err instanceof joseErrors.JOSEError || err instanceof TypeError) {
        throw new IdpFailure('invalid_token', 'The identity token is invalid, has expired, or was issued for another application.');
      }
      throw err;
    }
    // With several audiences the token must name us as its authorized party (OpenID Connect Core 3.1.3.7).
    if (Array.isArray(payload.aud) && payload.aud.length > 1 && payload.azp !== clientId) {
      throw new IdpFailure('invalid_token', 'The identity token was issued for another application.');
    }
    if (expected.nonce !== undefined && payload.nonce !== expected.nonce) {
      throw new IdpFailure('invalid_token', 'The identity token does not belong to this sign-in attempt.');
    }
    const email = typeof payload.email === 'string' ? payload.email.trim().toLowerCase() : '';
    if (!email) throw new IdpFailure('email_missing', 'The identity provider did not share an email address. Allow access to your email and try again.');
    if (payload.email_verified !== true && payload.email_verified !== 'true') {
      throw new IdpFailure('email_not_verified', 'The identity provider has not verified this email address. Verify it there, then try again.');
    }
    if (isReservedEmail(email)) {
      throw new IdpFailure(
        'email_reserved',
        `Addresses at ${RESERVED_EMAIL_DOMAIN} belong to the service itself and cannot sign in. Sign in with an identity-provider account that has your own email address.`,
        true,
      );
    }
    const name = typeof payload.name === 'string' && payload.name.trim() ? payload.name.trim().slice(0, 100) : null;
    return { issuer: meta.issuer, subject: payload.sub!, email, name };
  }

  return {
    /** Non-null when sign-in by ID token is configured (issuer and client id). */
    clientId: issuer && clientId ? clientId : null,
    redirectEnabled: Boolean(issuer && clientId && clientSecret),

    verifyIdToken,

    /** Starts the redirect flow: the provider URL and the secrets the callback must be able to check. */
    async startAuthorization(redirectUri: string) {
      if (!issuer || !clientId || !clientSecret) throw signinDisabled();
      const meta = await discover();
      const flow = { state: randomToken(), nonce: randomToken(), verifier: randomToken() };
      const url = new URL(meta.authorization_endpoint);
      url.search = new URLSearchParams({
        response_type: 'code',
        client_id: clientId,
        redirect_uri: redirectUri,
        scope: 'openid email profile',
        state: flow.state,
        nonce: flow.nonce,
        code_challenge: pkceChallenge(flow.verifier),
        code_challenge_method: 'S256',
      }).toString();
      return { url: url.toString(), flow };
    },

    /** Redeems an authorization code (with the PKCE verifier) and verifies the ID token it returns. */
    async completeAuthorization(input: { code: string; verifier: string; nonce: string; redirectUri: string }): Promise<VerifiedIdentity> {
      if (!issuer || !clientId || !clientSecret) throw signinDisabled();
      const meta = await discover();
      const form = new URLSearchParams({ grant_type: 'authorization_code', code: input.code, redirect_uri: input.redirectUri, code_verifier: input.verifier });
      const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' };
      const methods = meta.token_endpoint_auth_methods_supported ?? ['client_secret_basic'];
      if (methods.includes('client_secret_basic') || !methods.includes('client_secret_post')) {
        // RFC 6749 2.3.1: both parts form-encoded before Basic encoding.
        headers.authorization = `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(clientSecret)}`).toString('base64')}`;
      } else {
        form.set('client_id', clientId);
        form.set('client_secret', clientSecret);
      }
      let tokens: { id_token?: unknown };
      try {
        const response = await fetch(meta.token_endpoint, { method: 'POST', headers, body: form, signal: AbortSignal.timeout(HTTP_TIMEOUT_MS) });
        tokens = (await response.json().catch(() => ({}))) as { id_token?: unknown };
        if (!response.ok) throw new IdpFailure('token_exchange_failed', `The identity provider refused the sign-in code (${response.status}).`);
      } catch (err) {
        if (err instanceof IdpFailure) throw err;
        throw new IdpFailure('provider_unavailable', 'The identity provider could not be reached.');
      }
      if (typeof tokens.id_token !== 'string') throw new IdpFailure('token_exchange_failed', 'The identity provider returned no ID token.');
      return verifyIdToken(tokens.id_token, { nonce: input.nonce });
    },
  };
}

export type IdentityProvider = ReturnType<typeof createIdentityProvider>;

/** An IdpFailure from the ID-token route is a 401 for the client, or a 400 when the identity can have no account here. */
export function idpFailureToHttp(err: unknown): unknown {
  if (!(err instanceof IdpFailure)) return err;
  return err.refused ? badRequest(err.message, { field: 'credential', reason: err.reason }) : unauthorized(err.message);
}
