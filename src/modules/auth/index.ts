/**
 * The auth module's public entry: what other modules may import from it (the boundary check refuses the rest).
 * Other modules read and write users, sessions and the security history through `AuthService['data']`.
 */
export { createAuthService, type AuthService, type UserCreatedHook } from './service.js';
export type { SignInHook, SignInMethod } from './session-start.js';
export type { AuthData, ProfileChanges, PublicUser, RevokeReason, SessionRow } from './data.js';
export { createIdentityProvider } from './idp.js';
export { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH, hashPassword, verifyPassword } from './passwords.js';
export { DisplayName } from './schemas.js';
export { toSecurityEvent, type SecurityEventKind, type SecurityEventRow } from './security-events.js';
export type { TwoFactor } from './two-factor.js';
export {
  HANDLE_PATTERN,
  PLAYGROUND_IDENTITY_EMAIL,
  RESERVED_EMAIL_DOMAIN,
  assertAssignableEmail,
  isInternalAccount,
  normalizeEmail,
  toMeUser,
  type InternalAccountKind,
  type Role,
  type UserRow,
} from './users.js';
export { IMPERSONATION_TTL_SECONDS, type Operator, type UserAdmin, type UserSearch, type UserStatus } from './admin.js';
