/**
 * The published webhook events (spec A "Outgoing webhook events"). Any domain event of the outbox with one of these
 * names is delivered to the webhooks of its user that subscribed to it (or to `*`); other outbox events (internal
 * ones such as `subscription.renewal_due`) are never delivered.
 */
export const WEBHOOK_EVENTS = [
  'job.succeeded',
  'job.failed',
  'generation.persisted',
  'payment.succeeded',
  'payment.refunded',
  'subscription.canceled',
] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

/** Subscribes a webhook to every published event. */
export const ALL_EVENTS = '*';

export const WEBHOOK_EVENT_CHOICES = [...WEBHOOK_EVENTS, ALL_EVENTS] as const;

const published = new Set<string>(WEBHOOK_EVENTS);
export const isPublishedEvent = (name: string): name is WebhookEvent => published.has(name);

/** Whether a webhook subscribed to `events` receives `name`. */
export const subscribesTo = (events: readonly string[], name: string): boolean =>
  isPublishedEvent(name) && (events.includes(ALL_EVENTS) || events.includes(name));
