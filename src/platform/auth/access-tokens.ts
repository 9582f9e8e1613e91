import { createSecretKey } from 'node:crypto';
import { SignJWT, jwtVerify, errors as joseErrors } from 'jose';
import type { Clock } from '../clock/clock.js';

export type Role = 'USER' | 'ADMIN' | 'SUPER_ADMIN';
export const ACCESS_TOKEN_TTL_SECONDS = 15 * 60;

/** `access` tokens open the API; other kinds (a 2FA challenge) are valid only at their own endpoint. */
export type TokenKind = 'access' | 'mfa_challenge';

export interface TokenClaims {
  sub: string;
  kind: TokenKind;
  role?: Role;
  sid?: string;
  /** RFC 8693 actor claim: the operator acting as `sub` (an admin impersonation token). */
  act?: { sub: string };
}

export interface AccessTokens {
  sign(claims: TokenClaims, ttlSeconds: number): Promise<string>;
  /** Returns the claims of a valid token of the expected kind, or null. */
  verify(token: string, kind: TokenKind): Promise<(TokenClaims & { exp: number }) | null>;
}

const ISSUER = 'storefront';

/** Whether a credential has the shape of a JWT (an access or challenge token), whatever its signature. */
export const looksLikeJwt = (token: string): boolean => /^[\w-]+\.[\w-]+\.[\w-]+$/.test(token);

/** Verified tokens kept per instance (each until its `exp`); the oldest is dropped first when full. */
export const VERIFIED_TOKENS_KEPT = 10_000;

type Verified = Omit<TokenClaims, 'kind'> & { kind: string; exp: number };

export function createAccessTokens(secret: string, clock: Clock, options: { maxCached?: number } = {}): AccessTokens {
  // A KeyObject made once: handing jose raw bytes would import a new CryptoKey on every sign and verify.
  const key = createSecretKey(Buffer.from(secret, 'utf8'));
  // Token string → its verified claims: the signature is checked once per instance, the expiry on every use. What a
  // token says never changes, so nothing else can make a cached answer wrong; revoking its session is checked by the
  // caller on every request (the auth plugin's `sessionOpen`), cached or not. Only valid tokens are kept (forging one
  // needs the secret), so garbage cannot crowd them out.
  const maxCached = options.maxCached ?? VERIFIED_TOKENS_KEPT;
  const verified = new Map<string, Verified>();

  /** Like jose's check: expired from the second `exp` names. */
  const expired = (claims: Verified) => claims.exp <= Math.floor(clock.now().getTime() / 1000);

  function answer(claims: Verified, kind: TokenKind): (TokenClaims & { exp: number }) | null {
    if (claims.kind !== kind) return null;
    return { sub: claims.sub, kind, exp: claims.exp, role: claims.role, sid: claims.sid, act: claims.act };
  }

  async function verifySignature(token: string): Promise<Verified | null> {
    try {
      const { payload } = await jwtVerify(token, key, { issuer: ISSUER, algorithms: ['HS256'], currentDate: clock.now() });
      if (typeof payload.kind !== 'string' || typeof payload.sub !== 'string' || typeof payload.exp !== 'number') return null;
      return {
        sub: payload.sub,
        kind: payload.kind,
        exp: payload.exp,
        role: payload.role as Role | undefined,
        sid: typeof payload.sid === 'string' ? payload.sid : undefined,
        act: actorOf(payload.act),
      };
    } catch (err) {
      if (err instanceof joseErrors.JOSEError) return null;
      throw err;
    }
  }

  return {
    async sign(claims, ttlSeconds) {
      const nowSeconds = Math.floor(clock.now().getTime() / 1000);
      return new SignJWT({ kind: claims.kind, role: claims.role, sid: claims.sid, ...(claims.act ? { act: { sub: claims.act.sub } } : {}) })
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setSubject(claims.sub)
        .setIssuer(ISSUER)
        .setIssuedAt(nowSeconds)
        .setExpirationTime(nowSeconds + ttlSeconds)
        .sign(key);
    },
    async verify(token, kind) {
      const cached = verified.get(token);
      if (cached) {
        if (!expired(cached)) return answer(cached, kind);
        verified.delete(token);
        return null;
      }
      const claims = await verifySignature(token);
      if (!claims) return null;
      if (verified.size >= maxCached) verified.delete(verified.keys().next().value!);
      verified.set(token, claims);
      return answer(claims, kind);
    },
  };
}

/** The `act` claim when it is well formed (`{ sub: string }`), else undefined. */
function actorOf(act: unknown): { sub: string } | undefined {
  if (typeof act !== 'object' || act === null) return undefined;
  const sub = (act as { sub?: unknown }).sub;
  return typeof sub === 'string' ? { sub } : undefined;
}
