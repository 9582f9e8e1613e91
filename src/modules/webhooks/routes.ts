import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../../platform/auth/plugin.js';
import { errorResponses } from '../../platform/http/schemas.js';
import {
  CreateWebhookBody,
  DeliveriesPage,
  DeliveriesQuery,
  Delivery,
  DeliveryParams,
  UpdateWebhookBody,
  Webhook,
  WebhookEventList,
  WebhookIdParams,
  WebhookList,
} from './schemas.js';
import type { WebhooksService } from './service.js';

export const webhookRoutes: FastifyPluginAsyncTypebox<{
  webhooks: WebhooksService;
  /** Refuses a caller whose account is no longer active (the auth service's check). */
  ensureActive: (userId: string) => Promise<unknown>;
}> = async (app, { webhooks, ensureActive }) => {
  app.addHook('preHandler', async (request) => {
    if (request.principal) await ensureActive(request.principal.userId);
  });
  const tags = ['webhooks'];
  const config = { auth: 'required' as const };

  app.get(
    '/v1/webhooks/events',
    {
      config,
      schema: {
        tags,
        summary: 'The event names a webhook can subscribe to ("*" subscribes to all)',
        response: { 200: WebhookEventList, ...errorResponses(401) },
      },
    },
    async () => webhooks.events(),
  );

  app.post(
    '/v1/webhooks',
    {
      config,
      schema: {
        tags,
        summary: 'Register a webhook; the signing secret is returned in clear only in this answer',
        body: CreateWebhookBody,
        response: { 201: Webhook, ...errorResponses(400, 401) },
      },
    },
    async (request, reply) => reply.code(201).send(await webhooks.create(principalOf(request).userId, request.body)),
  );

  app.get(
    '/v1/webhooks',
    { config, schema: { tags, summary: 'Your webhooks, secrets masked', response: { 200: WebhookList, ...errorResponses(401) } } },
    async (request) => webhooks.list(principalOf(request).userId),
  );

  app.patch(
    '/v1/webhooks/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Change a webhook; status ACTIVE re-enables it and resets its failure count',
        params: WebhookIdParams,
        body: UpdateWebhookBody,
        response: { 200: Webhook, ...errorResponses(400, 401, 404) },
      },
    },
    async (request) => webhooks.update(principalOf(request).userId, request.params.id, request.body),
  );

  app.post(
    '/v1/webhooks/:id/rotate-secret',
    {
      config,
      schema: {
        tags,
        summary: 'A new signing secret, returned in clear once; the old one stops at once',
        params: WebhookIdParams,
        response: { 200: Webhook, ...errorResponses(400, 401, 404) },
      },
    },
    async (request) => webhooks.rotateSecret(principalOf(request).userId, request.params.id),
  );

  app.get(
    '/v1/webhooks/:id/deliveries',
    {
      config,
      schema: {
        tags,
        summary: 'Recent deliveries, newest first, with their attempts and response codes',
        params: WebhookIdParams,
        querystring: DeliveriesQuery,
        response: { 200: DeliveriesPage, ...errorResponses(400, 401, 404) },
      },
    },
    async (request) => webhooks.deliveries(principalOf(request).userId, request.params.id, { limit: request.query.limit ?? 20, cursor: request.query.cursor }),
  );

  app.post(
    '/v1/webhooks/:id/deliveries/:dId/resend',
    {
      config,
      schema: {
        tags,
        summary: 'Send a delivery again with its original payload (a new delivery with its own id and attempts)',
        params: DeliveryParams,
        response: { 201: Delivery, ...errorResponses(400, 401, 404) },
      },
    },
    async (request, reply) => reply.code(201).send(await webhooks.resend(principalOf(request).userId, request.params.id, request.params.dId)),
  );
};
