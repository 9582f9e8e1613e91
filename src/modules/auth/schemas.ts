import { Type } from 'typebox';
import { Nullable, StrictObject } from '../../platform/http/schemas.js';
import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from './passwords.js';

const Email = Type.String({ format: 'email', maxLength: 254, description: 'Case-insensitive' });
export const DisplayName = Type.String({ minLength: 1, maxLength: 100, pattern: '\\S' });

export const SignupBody = StrictObject({
  email: Email,
  password: Type.String({ minLength: MIN_PASSWORD_LENGTH, maxLength: MAX_PASSWORD_LENGTH }),
  name: Type.Optional(DisplayName),
});

export const LoginBody = StrictObject({
  email: Email,
  password: Type.String({ minLength: 1, maxLength: MAX_PASSWORD_LENGTH }),
});

/**
 * Refresh and logout take the token in the body or, with an empty body, from the `rt` cookie. The length cap is loose on
 * purpose: a wrong token (an access token sent by mistake) is a 401 from the route, not a 400 about its length.
 */
export const RefreshBody = StrictObject({ refreshToken: Type.Optional(Type.String({ minLength: 1, maxLength: 4096 })) });

export const AuthUser = Type.Object({
  id: Type.String(),
  email: Type.String(),
  role: Type.Union([Type.Literal('USER'), Type.Literal('ADMIN'), Type.Literal('SUPER_ADMIN')]),
  name: Nullable(Type.String()),
  handle: Nullable(Type.String()),
  avatarUrl: Nullable(Type.String()),
});

export const TokenPair = Type.Object({
  accessToken: Type.String(),
  refreshToken: Type.String(),
  tokenType: Type.Literal('Bearer'),
  expiresIn: Type.Integer({ description: 'Access token lifetime in seconds (900)' }),
});

export const TokenBundle = Type.Object({ user: AuthUser, ...TokenPair.properties });

export const AuthConfig = Type.Object({ idpClientId: Nullable(Type.String()) });

/** The 402 answer of a login when two-factor is on: not the error envelope. */
export const MfaChallenge = Type.Object({
  mfaRequired: Type.Literal(true),
  challengeToken: Type.String({ description: 'Valid 5 minutes, only at POST /v1/auth/2fa/verify' }),
  tokenType: Type.Literal('Bearer'),
});

export const TwoFactorVerifyBody = StrictObject({
  challengeToken: Type.String({ minLength: 1, maxLength: 2048 }),
  code: Type.String({ minLength: 6, maxLength: 32, description: 'A 6-digit authenticator code, or a recovery code like xxxx-xxxx' }),
});
