import type { FastifyInstance } from 'fastify';
import type { Database } from '../db/database.js';
import type { Jobs } from '../jobs/jobs.js';

export function registerHealthRoutes(app: FastifyInstance, deps: { database: Database; jobs: Jobs }): void {
  app.get('/healthz', { schema: { tags: ['operations'], summary: 'Liveness: the process answers' } }, async () => ({ status: 'ok' }));

  app.get('/readyz', { schema: { tags: ['operations'], summary: 'Readiness: database reachable and job workers running' } }, async (_request, reply) => {
    const database = await deps.database
      .query('select 1')
      .then(() => 'ok')
      .catch(() => 'unavailable');
    const jobs = deps.jobs.running ? 'ok' : 'stopped';
    const ready = database === 'ok' && jobs === 'ok';
    return reply.code(ready ? 200 : 503).send({ status: ready ? 'ready' : 'not_ready', checks: { database, jobs } });
  });
}
