import { and, count, desc, eq, sql } from 'drizzle-orm';
import { webhookEndpoints, type WebhookStatus } from '../../db/schema/webhooks.js';
import type { Clock } from '../../platform/clock/clock.js';
import type { Db, DbOrTx } from '../../platform/db/database.js';
import { badRequest, notFound } from '../../platform/http/errors.js';
import { checkWebhookUrl, type ResolveHost } from './destination.js';
import { failPendingDeliveries } from './deliveries.js';
import { maskSecret, newSecret } from './signing.js';

export type WebhookRow = typeof webhookEndpoints.$inferSelect;

/** How many webhooks one user may register (our limit: the spec sets none). */
export const MAX_WEBHOOKS_PER_USER = 20;

export interface RegistrationDeps {
  db: Db;
  clock: Clock;
  allowPrivateNetwork: boolean;
  resolveHost?: ResolveHost;
}

export interface NewWebhook {
  url: string;
  events: string[];
  description?: string | null;
}

export interface WebhookChanges {
  url?: string;
  events?: string[];
  description?: string | null;
  status?: WebhookStatus;
}

/** The wire shape; `secret` is the cleartext only right after creation or rotation, masked everywhere else. */
export const toWebhookView = (row: WebhookRow, options: { revealSecret?: boolean } = {}) => ({
  id: row.id,
  url: row.url,
  events: row.events,
  description: row.description,
  status: row.status,
  secret: options.revealSecret ? row.secret : maskSecret(row.secret),
  failureCount: row.failureCount,
  disabledAt: row.disabledAt?.toISOString() ?? null,
  disabledReason: row.disabledReason,
  createdAt: row.createdAt.toISOString(),
  updatedAt: row.updatedAt.toISOString(),
});

export const webhookNotFound = () => notFound('No webhook with this id exists on your account.');

/** The caller's webhook, or 404 (a foreign id is indistinguishable from a missing one). */
export async function ownWebhook(tx: DbOrTx, userId: string, id: string, options: { lock?: boolean } = {}): Promise<WebhookRow> {
  const query = tx
    .select()
    .from(webhookEndpoints)
    .where(and(eq(webhookEndpoints.id, id), eq(webhookEndpoints.userId, userId)));
  const [row] = options.lock ? await query.for('update') : await query;
  if (!row) throw webhookNotFound();
  return row;
}

/** `*` alone stands for every event; listing it beside names says nothing more, so the names are dropped. */
const normaliseEvents = (events: string[]) => (events.includes('*') ? ['*'] : [...new Set(events)]);

export function createRegistrations(deps: RegistrationDeps) {
  const { db, clock } = deps;
  const checkUrl = (url: string) => checkWebhookUrl(url, { allowPrivateNetwork: deps.allowPrivateNetwork, resolve: deps.resolveHost });

  return {
    async create(userId: string, input: NewWebhook) {
      const url = await checkUrl(input.url);
      return db.transaction(async (tx) => {
        // One registration at a time per user, so the limit holds under concurrent requests.
        await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`webhooks:${userId}`}))`);
        const [{ total }] = (await tx.select({ total: count() }).from(webhookEndpoints).where(eq(webhookEndpoints.userId, userId))) as [{ total: number }];
        if (total >= MAX_WEBHOOKS_PER_USER) {
          throw badRequest(
            `You already have ${MAX_WEBHOOKS_PER_USER} webhooks, the most an account can register. Change an existing one with PATCH /v1/webhooks/:id instead.`,
            {
              limit: MAX_WEBHOOKS_PER_USER,
            },
          );
        }
        const now = clock.now();
        const [row] = await tx
          .insert(webhookEndpoints)
          .values({
            userId,
            url,
            events: normaliseEvents(input.events),
            description: input.description ?? null,
            secret: newSecret(),
            createdAt: now,
            updatedAt: now,
          })
          .returning();
        return toWebhookView(row!, { revealSecret: true });
      });
    },

    async list(userId: string) {
      const rows = await db
        .select()
        .from(webhookEndpoints)
        .where(eq(webhookEndpoints.userId, userId))
        .orderBy(desc(webhookEndpoints.createdAt), desc(webhookEndpoints.id));
      return { items: rows.map((row) => toWebhookView(row)) };
    },

    /** Changes url, events, description or status; `status=ACTIVE` re-enables and resets the failure count. */
    async update(userId: string, id: string, changes: WebhookChanges) {
      const url = changes.url === undefined ? undefined : await checkUrl(changes.url);
      return db.transaction(async (tx) => {
        const current = await ownWebhook(tx, userId, id, { lock: true });
        const now = clock.now();
        const set: Partial<typeof webhookEndpoints.$inferInsert> = { updatedAt: now };
        if (url !== undefined) set.url = url;
        if (changes.events !== undefined) set.events = normaliseEvents(changes.events);
        if (changes.description !== undefined) set.description = changes.description;
        if (changes.status === 'ACTIVE') Object.assign(set, { status: 'ACTIVE', failureCount: 0, disabledAt: null, disabledReason: null });
        if (changes.status === 'DISABLED' && current.status !== 'DISABLED') {
          Object.assign(set, { status: 'DISABLED', disabledAt: now, disabledReason: 'Disabled by its owner.' });
          await failPendingDeliveries(tx, id, now);
        }
        const [row] = await tx.update(webhookEndpoints).set(set).where(eq(webhookEndpoints.id, id)).returning();
        return toWebhookView(row!);
      });
    },

    /** Disables every webhook of a user (an account being deleted), in the caller's transaction. */
    async disableAllForUser(userId: string, tx: DbOrTx = db): Promise<void> {
      const now = clock.now();
      const disabled = await tx
        .update(webhookEndpoints)
        .set({ status: 'DISABLED', disabledAt: now, disabledReason: 'The account was deleted.', updatedAt: now })
        .where(and(eq(webhookEndpoints.userId, userId), eq(webhookEndpoints.status, 'ACTIVE')))
        .returning({ id: webhookEndpoints.id });
      for (const { id } of disabled) await failPendingDeliveries(tx, id, now);
    },

    /** A new secret, returned once; the old one stops signing at once (no grace period). */
    async rotateSecret(userId: string, id: string) {
      return db.transaction(async (tx) => {
        await ownWebhook(tx, userId, id, { lock: true });
        const [row] = await tx.update(webhookEndpoints).set({ secret: newSecret(), updatedAt: clock.now() }).where(eq(webhookEndpoints.id, id)).returning();
        return toWebhookView(row!, { revealSecret: true });
      });
    },
  };
}

export type Registrations = ReturnType<typeof createRegistrations>;
