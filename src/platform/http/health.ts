import type { FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';
import type { Database } from '../db/database.js';
import type { Jobs } from '../jobs/jobs.js';

/** A Redis that has not answered a PING within this long is reported unavailable. */
const REDIS_PING_MS = 500;

async function redisCheck(redis: Redis): Promise<'ok' | 'unavailable'> {
  if (redis.status !== 'ready') return 'unavailable';
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('no answer')), REDIS_PING_MS);
  });
  try {
    await Promise.race([redis.ping(), late]);
    return 'ok';
  } catch {
    return 'unavailable';
  } finally {
    clearTimeout(timer);
  }
}

/**
 * `/healthz` (the process answers) and `/readyz`: ready while the database answers and the job workers run. Redis,
 * when configured, is reported too; without it the service still serves everything (rate limits are then counted by
 * each instance alone), so it is `degraded` but stays ready rather than being taken out of the load balancer.
 */
export function registerHealthRoutes(app: FastifyInstance, deps: { database: Database; jobs: Jobs; redis?: Redis | null }): void {
  app.get('/healthz', { schema: { tags: ['operations'], summary: 'Liveness: the process answers' } }, async () => ({ status: 'ok' }));

  app.get('/readyz', { schema: { tags: ['operations'], summary: 'Readiness: database reachable and job workers running' } }, async (_request, reply) => {
    const [database, redis] = await Promise.all([
      deps.database
        .query('select 1')
        .then(() => 'ok')
        .catch(() => 'unavailable'),
      deps.redis ? redisCheck(deps.redis) : null,
    ]);
    const jobs = deps.jobs.running ? 'ok' : 'stopped';
    const ready = database === 'ok' && jobs === 'ok';
    const status = !ready ? 'not_ready' : redis === 'unavailable' ? 'degraded' : 'ready';
    return reply.code(ready ? 200 : 503).send({ status, checks: { database, jobs, ...(redis ? { redis } : {}) } });
  });
}
