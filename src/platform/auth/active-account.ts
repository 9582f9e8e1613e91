import type { FastifyRequest } from 'fastify';

/**
 * A preHandler for route plugins: a signed-in caller whose account was deleted since the access token was issued
 * is refused (401) at once, instead of for the rest of the token's 15 minutes.
 */
export function activeAccountHook(ensureActive: (userId: string) => Promise<unknown>) {
  return async (request: FastifyRequest) => {
    if (request.principal) await ensureActive(request.principal.userId);
  };
}
