import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ADMIN_ROUTE, SUPER_ADMIN_ROUTE, auditActorOf } from '../../platform/auth/roles.js';
import { Ok, errorResponses } from '../../platform/http/schemas.js';
import {
  Announcement,
  AnnouncementIdParams,
  AnnouncementPage,
  AnnouncementsQuery,
  CreateAnnouncementBody,
  NotifyResult,
  UpdateAnnouncementBody,
} from './schemas.js';
import type { AnnouncementsService } from './service.js';

/** Admin CRUD of announcements: reads for ADMIN and SUPER_ADMIN, changes and notifications for SUPER_ADMIN, audited. */
export const announcementAdminRoutes: FastifyPluginAsyncTypebox<{ announcements: AnnouncementsService }> = async (app, { announcements }) => {
  const tags = ['admin'];

  app.get(
    '/v1/admin/announcements',
    {
      config: ADMIN_ROUTE,
      schema: {
        tags,
        summary: 'Every announcement, newest first',
        querystring: AnnouncementsQuery,
        response: { 200: AnnouncementPage, ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => announcements.list({ ...request.query, limit: request.query.limit ?? 20 }),
  );

  app.get(
    '/v1/admin/announcements/:id',
    {
      config: ADMIN_ROUTE,
      schema: { tags, summary: 'One announcement', params: AnnouncementIdParams, response: { 200: Announcement, ...errorResponses(400, 401, 403, 404) } },
    },
    async (request) => announcements.get(request.params.id),
  );

  app.post(
    '/v1/admin/announcements',
    {
      config: SUPER_ADMIN_ROUTE,
      schema: {
        tags,
        summary: 'Create an announcement; `notify: true` also sends an ANNOUNCEMENT notification to its audience (once, in the background)',
        body: CreateAnnouncementBody,
        response: { 201: Announcement, ...errorResponses(400, 401, 403) },
      },
    },
    async (request, reply) => reply.code(201).send(await announcements.create(auditActorOf(request), request.body)),
  );

  app.patch(
    '/v1/admin/announcements/:id',
    {
      config: SUPER_ADMIN_ROUTE,
      schema: {
        tags,
        summary: 'Change an announcement (a notification already sent is not sent again)',
        params: AnnouncementIdParams,
        body: UpdateAnnouncementBody,
        response: { 200: Announcement, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => announcements.update(auditActorOf(request), request.params.id, request.body),
  );

  app.delete(
    '/v1/admin/announcements/:id',
    {
      config: SUPER_ADMIN_ROUTE,
      schema: {
        tags,
        summary: 'Delete an announcement (its banner disappears; notifications sent stay in inboxes)',
        params: AnnouncementIdParams,
        response: { 200: Ok, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => {
      await announcements.remove(auditActorOf(request), request.params.id);
      return { ok: true as const };
    },
  );

  app.post(
    '/v1/admin/announcements/:id/notify',
    {
      config: SUPER_ADMIN_ROUTE,
      schema: {
        tags,
        summary: 'Send the ANNOUNCEMENT notification to the audience: once per announcement, in the background; a repeat answers the progress',
        params: AnnouncementIdParams,
        response: { 202: NotifyResult, ...errorResponses(400, 401, 403, 404, 409) },
      },
    },
    async (request, reply) => reply.code(202).send(await announcements.notify(auditActorOf(request), request.params.id)),
  );
};
