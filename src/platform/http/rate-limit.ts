import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';
import { AppError } from './errors.js';

const UNLIMITED_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

/** The global per-IP limit; kept in Redis when available so it holds across instances. */
export async function registerRateLimit(app: FastifyInstance, options: { perMinute: number; redis: Redis | null }): Promise<void> {
  await app.register(rateLimit, {
    global: true,
    max: options.perMinute,
    timeWindow: 60_000,
    keyGenerator: (request) => request.ip,
    allowList: (request) => UNLIMITED_PATHS.has(request.url.split('?')[0] ?? ''),
    ...(options.redis ? { redis: options.redis, nameSpace: 'storefront:ratelimit:' } : {}),
    // A Redis outage must not take the API down with it.
    skipOnError: true,
    errorResponseBuilder: (_request, context) => {
      const seconds = Math.max(1, Math.ceil(context.ttl / 1000));
      return new AppError(429, 'RATE_LIMITED', `Too many requests from your address. Try again in ${seconds} second${seconds === 1 ? '' : 's'}.`, {
        limit: context.max,
        retryAfterSeconds: seconds,
      });
    },
  });
}
