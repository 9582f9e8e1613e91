import { AppError } from '../http/errors.js';

/**
 * What an impersonation token (an operator acting as a user, `act: { sub: operatorId }`) may do: read the user's own
 * account state that a support conversation needs, and nothing else. Every route not listed here refuses it (403), so
 * a route added later is refused until someone decides it belongs here. Refused in particular: every change (a
 * webhook, API key, invitation or profile change would outlive the 10-minute token), credentials, two-factor settings,
 * sessions and security history, payments and top-ups, metered calls (they spend the user's tokens), data exports,
 * workspaces, webhooks, the community (its public pages need no token) and every admin route.
 *
 * Keys are `METHOD url` as the route is registered (`:id` parameters); a HEAD request is treated as its GET.
 */
export const IMPERSONATION_ALLOWED_ROUTES: ReadonlySet<string> = new Set([
  // The profile and settings as the user sees them
  'GET /v1/users/me',
  'GET /v1/account/preferences',
  'GET /v1/account/notification-prefs',
  'GET /v1/notifications',
  // The catalog and the app as the user's plan shows them
  'GET /v1/models',
  'GET /v1/models/me',
  'GET /v1/flags',
  'GET /v1/announcements',
  // Credits and plan
  'GET /v1/credits/balance',
  'GET /v1/credits/transactions',
  'GET /v1/subscriptions',
  'GET /v1/subscriptions/credits/balance',
  'GET /v1/subscriptions/credits/transactions',
  // Generations: library, jobs, files, usage
  'GET /v1/library/generations',
  'GET /v1/library/generations/:id',
  'GET /v1/library/prompts',
  'GET /v1/jobs',
  'GET /v1/jobs/:id',
  'GET /v1/jobs/:id/stream',
  'GET /v1/files/:id',
  'GET /v1/usage',
  'GET /v1/usage/summary',
  // The creator's own analytics
  'GET /v1/community/me/analytics',
  'GET /v1/community/posts/:id/analytics',
]);

/** The 403 for an impersonated request on a route outside the allow-list, or null when it may go ahead. */
export function impersonationRefusal(method: string, routeUrl: string): AppError | null {
  const asRead = method === 'HEAD' ? 'GET' : method;
  if (IMPERSONATION_ALLOWED_ROUTES.has(`${asRead} ${routeUrl}`)) return null;
  return new AppError(
    403,
    'IMPERSONATION_NOT_ALLOWED',
    `An impersonation token can only read the user's profile, credits, plan, library, jobs and usage; it cannot be used for ${method} ${routeUrl}. Use your own access token for admin routes, or ask the user to make this change.`,
    { method, route: routeUrl },
  );
}
