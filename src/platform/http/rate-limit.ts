import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Redis } from 'ioredis';
import type { Metrics } from '../metrics/metrics.js';
import { AppError } from './errors.js';
import { redisWithLocalFallback } from './rate-limit-store.js';

const UNLIMITED_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * The global per-IP limit; kept in Redis when available so it holds across instances, and counted by each instance
 * alone while Redis does not answer (rate-limit-store.ts), so limits never stop applying.
 */
export async function registerRateLimit(app: FastifyInstance, options: { perMinute: number; redis: Redis | null; metrics: Metrics }): Promise<void> {
  await app.register(rateLimit, {
    global: true,
    max: options.perMinute,
    timeWindow: 60_000,
    keyGenerator: (request) => request.ip,
    allowList: (request) => UNLIMITED_PATHS.has(request.url.split('?')[0] ?? ''),
    ...(options.redis
      ? { store: redisWithLocalFallback(options.redis, { nameSpace: 'storefront:ratelimit:', logger: app.log, metrics: options.metrics }) }
      : {}),
    errorResponseBuilder: (_request, context) => {
      const seconds = Math.max(1, Math.ceil(context.ttl / 1000));
      return new AppError(429, 'RATE_LIMITED', `Too many requests from your address. Try again in ${seconds} second${seconds === 1 ? '' : 's'}.`, {
        limit: context.max,
        retryAfterSeconds: seconds,
      });
    },
  });
}

/**
 * A per-credential limit on top of the per-IP one (an API key's `rateLimit.requestsPerMinute`), counted in
 * the same store (Redis when available, so it holds across instances; per instance while Redis is away). `limitOf` names the bucket and its limit, or
 * null for a request it does not cover (nothing is counted then).
 */
export function registerCredentialRateLimit(app: FastifyInstance, limitOf: (request: FastifyRequest) => { key: string; perMinute: number } | null): void {
  const limits = new WeakMap<FastifyRequest, { key: string; perMinute: number }>();
  const check = app.createRateLimit({
    timeWindow: 60_000,
    keyGenerator: (request) => `credential:${limits.get(request)?.key ?? ''}`,
    max: (request) => limits.get(request)?.perMinute ?? 1,
    allowList: () => false,
  });
  app.addHook('preHandler', async (request, reply) => {
    const limit = limitOf(request);
    if (!limit) return;
    limits.set(request, limit);
    const result = await check(request);
    if (result.isAllowed || !result.isExceeded) return;
    const seconds = Math.max(1, result.ttlInSeconds);
    void reply.header('retry-after', String(seconds));
    throw new AppError(
      429,
      'RATE_LIMITED',
      `This API key is limited to ${limit.perMinute} requests a minute. Try again in ${seconds} second${seconds === 1 ? '' : 's'}.`,
      {
        limit: limit.perMinute,
        retryAfterSeconds: seconds,
      },
    );
  });
}
