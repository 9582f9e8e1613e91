/**
 * What an impersonation token (an operator acting as a user, `act: { sub: operatorId }`) may not do: anything that
 * takes over or locks out the account or leaves a lasting credential behind. The operator sees and uses the product
 * as the user does; they cannot change the password, email or two-factor settings, sign the user's devices out,
 * delete the account, create or revoke API keys, request a data export, or use any admin route.
 * Reads (GET) of those areas stay open so the operator can see what the user sees.
 */
const REFUSED_PREFIXES = [
  '/v1/account/password/',
  '/v1/account/email/',
  '/v1/account/verify-email/',
  '/v1/account/2fa/',
  '/v1/account/delete',
  '/v1/account/api-keys',
  '/v1/account/data-export',
  '/v1/account/sessions',
  '/v1/auth/',
];

/** The reason an impersonated request is refused, or null when it may go ahead. */
export function impersonationRefusal(method: string, routeUrl: string, config: { roles?: readonly string[] }): string | null {
  if (config.roles || routeUrl.startsWith('/v1/admin')) return 'Admin routes cannot be used with an impersonation token. Use your own access token.';
  if (method === 'GET' || method === 'HEAD') return null;
  if (REFUSED_PREFIXES.some((prefix) => routeUrl.startsWith(prefix))) {
    return 'An impersonation token cannot change credentials, security settings, sessions, API keys or the account itself. Ask the user to do it.';
  }
  return null;
}
