import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { principalOf } from '../../platform/auth/plugin.js';
import { errorResponses } from '../../platform/http/schemas.js';
import { openSse } from '../../platform/http/sse.js';
import { JobIdParams, JobSchema, JobsPage, JobsQuery, JOBS_PAGE_DEFAULT } from './schemas.js';
import type { JobsService } from './service.js';
import { streamJob } from './stream.js';

/** `/v1/jobs`: the caller's jobs; API keys need `jobs:read` (reads, stream) or `jobs:write` (cancel). */
export const jobsRoutes: FastifyPluginAsyncTypebox<{ jobs: JobsService }> = async (app, { jobs }) => {
  const tags = ['jobs'];
  const read = { auth: 'required' as const, scope: 'jobs:read' };

  app.get(
    '/v1/jobs',
    {
      config: read,
      schema: { tags, summary: 'Your jobs, newest first', querystring: JobsQuery, response: { 200: JobsPage, ...errorResponses(400, 401, 403) } },
    },
    async (request) => {
      const { limit = JOBS_PAGE_DEFAULT, cursor, status, kind } = request.query;
      return jobs.list(principalOf(request).userId, { limit, cursor, status, kind });
    },
  );

  app.get(
    '/v1/jobs/:id',
    {
      config: read,
      schema: { tags, summary: 'One of your jobs', params: JobIdParams, response: { 200: JobSchema, ...errorResponses(401, 403, 404) } },
    },
    async (request) => jobs.getOwn(principalOf(request).userId, request.params.id),
  );

  app.get(
    '/v1/jobs/:id/stream',
    {
      config: { ...read, openapi: { stream: 'always' } },
      schema: {
        tags,
        summary:
          'Server-sent events of a job: `data: {type: "job", job}` with the current state at once, then every change; the stream ends after the final state',
        params: JobIdParams,
        response: { 200: Type.String({ description: 'text/event-stream' }), ...errorResponses(401, 403, 404) },
      },
    },
    async (request, reply) => {
      const userId = principalOf(request).userId;
      // Ownership is checked before the stream opens, so a foreign id is an ordinary 404.
      await jobs.getOwn(userId, request.params.id);
      await streamJob(jobs, userId, request.params.id, () => openSse(request, reply));
      return reply;
    },
  );

  app.post(
    '/v1/jobs/:id/cancel',
    {
      config: { auth: 'required', scope: 'jobs:write' },
      schema: {
        tags,
        summary: 'Cancel a QUEUED or RUNNING job',
        description:
          'Refunded in full while the provider has not got the job, or when it confirms it stopped the task unbilled. A job the provider is making and cannot stop (MiniMax, Kling, Google Veo, a running Runway task, a running image job) is charged its full price: the provider bills it. 409 for a finished job, and for a moment while the job is being handed to the provider.',
        params: JobIdParams,
        response: { 200: JobSchema, ...errorResponses(401, 403, 404, 409) },
      },
    },
    async (request) => jobs.cancel(principalOf(request).userId, request.params.id),
  );
};
