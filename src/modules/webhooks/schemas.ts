import { Type } from 'typebox';
import { DateTime, Nullable, Page, StrictObject, pageQuery } from '../../platform/http/schemas.js';
import { WEBHOOK_EVENT_CHOICES, WEBHOOK_EVENTS } from './events.js';

const Url = Type.String({
  minLength: 1,
  maxLength: 2048,
  description: 'An https URL (http and private addresses only when the server allows private networking)',
});
const Events = Type.Array(Type.Enum(WEBHOOK_EVENT_CHOICES), {
  minItems: 1,
  maxItems: WEBHOOK_EVENT_CHOICES.length,
  uniqueItems: true,
  description: 'Event names from GET /v1/webhooks/events, or "*" for all of them',
});
const Description = Type.String({ maxLength: 500 });

export const CreateWebhookBody = StrictObject({ url: Url, events: Events, description: Type.Optional(Nullable(Description)) });

export const UpdateWebhookBody = StrictObject(
  {
    url: Type.Optional(Url),
    events: Type.Optional(Events),
    description: Type.Optional(Nullable(Description)),
    status: Type.Optional(Type.Enum(['ACTIVE', 'DISABLED'], { description: 'ACTIVE re-enables a disabled webhook and resets its failure count' })),
  },
  { minProperties: 1 },
);

export const Webhook = Type.Object({
  id: Type.String(),
  url: Type.String(),
  events: Type.Array(Type.String()),
  description: Nullable(Type.String()),
  status: Type.Enum(['ACTIVE', 'DISABLED']),
  secret: Type.String({
    description: 'The signing secret in clear only in the answer to creation and rotation; elsewhere whsec_, bullets and its last 4 characters',
  }),
  failureCount: Type.Integer({ description: 'Failed attempts since the last successful one' }),
  disabledAt: Nullable(DateTime),
  disabledReason: Nullable(Type.String()),
  createdAt: DateTime,
  updatedAt: DateTime,
});

export const WebhookList = Type.Object({ items: Type.Array(Webhook) });

export const WebhookEventList = Type.Object({ items: Type.Array(Type.Enum(WEBHOOK_EVENTS)) });

export const WebhookIdParams = StrictObject({ id: Type.String({ format: 'uuid' }) });
export const DeliveryParams = StrictObject({ id: Type.String({ format: 'uuid' }), dId: Type.String({ format: 'uuid' }) });

export const DeliveriesQuery = StrictObject(pageQuery(20, 100));

export const Delivery = Type.Object({
  id: Type.String({ description: 'The delivery id, sent as X-Service-Delivery on every attempt' }),
  event: Type.String(),
  status: Type.Enum(['PENDING', 'SENDING', 'SUCCEEDED', 'FAILED']),
  resendOf: Nullable(Type.String({ description: 'The delivery this one resends' })),
  attemptCount: Type.Integer(),
  lastStatusCode: Nullable(Type.Integer()),
  nextAttemptAt: Nullable(DateTime),
  createdAt: DateTime,
  attempts: Type.Array(
    Type.Object({
      attempt: Type.Integer(),
      statusCode: Nullable(Type.Integer({ description: "The receiver's HTTP status; null when it gave none (timeout, connection or address refused)" })),
      succeeded: Type.Boolean(),
      error: Nullable(Type.String()),
      durationMs: Type.Integer(),
      signedAt: DateTime,
    }),
  ),
});

export const DeliveriesPage = Page(Delivery);
