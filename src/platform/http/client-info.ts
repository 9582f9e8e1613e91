import type { FastifyRequest } from 'fastify';

/** Where a request came from, as sessions and the security history record it. */
export interface ClientInfo {
  ip: string | null;
  userAgent: string | null;
}

export const clientInfo = (request: FastifyRequest): ClientInfo => ({
  ip: request.ip ?? null,
  userAgent: request.headers['user-agent']?.slice(0, 512) ?? null,
});
