import type { FastifyRequest } from 'fastify';
import { forbidden } from '../http/errors.js';
import type { Role } from './access-tokens.js';
import { principalOf, type RouteAuth } from './plugin.js';

/** Route config for admin reads and the playground: ADMIN or SUPER_ADMIN (spec A "Authentication" rule 9). */
export const ADMIN_ROUTE: RouteAuth = { auth: 'required', roles: ['ADMIN', 'SUPER_ADMIN'] };
/** Route config for admin changes to settings, money and roles: SUPER_ADMIN only (spec B "Admin"). */
export const SUPER_ADMIN_ROUTE: RouteAuth = { auth: 'required', roles: ['SUPER_ADMIN'] };

/** The audit actor of an admin request. */
export const auditActorOf = (request: FastifyRequest) => {
  const principal = principalOf(request);
  return { userId: principal.userId, role: principal.role, requestId: request.id };
};

/**
 * A preValidation hook for admin route plugins (before body validation, so a refused caller learns nothing more): the role in an access token is the role at sign-in, so the account's current
 * role is read again and a demoted or suspended operator loses access at once rather than when the token expires.
 * The principal then carries the current role, so the rules inside a route (who may suspend whom) and the audit
 * trail see it too, not the token's.
 */
export const currentRoleCheck =
  (currentRole: (userId: string) => Promise<Role>) =>
  async (request: FastifyRequest): Promise<void> => {
    const roles = (request.routeOptions.config as { roles?: readonly string[] }).roles;
    if (!roles || !request.principal) return;
    const role = await currentRole(request.principal.userId);
    if (!roles.includes(role)) throw forbidden(`This needs the ${roles.join(' or ')} role; your account's role is now ${role}.`);
    request.principal.role = role;
  };
