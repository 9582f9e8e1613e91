import { and, desc, eq, gt, inArray, or } from 'drizzle-orm';
import { subscriptionChanges, subscriptions } from '../../db/schema/subscriptions.js';
import type { DbOrTx } from '../../platform/db/database.js';
import { notFound } from '../../platform/http/errors.js';
import { isUuid } from './context.js';
import { ACTIVE_STATUSES, type SubscriptionRow } from './service.js';

export type ChangeRow = typeof subscriptionChanges.$inferSelect;
export const OPEN_CHANGE_STATUSES = ['AWAITING_PAYMENT', 'SCHEDULED'] as const;

/** In effect: ACTIVE, TRIALING or GRACE, or CANCELED until its end (the same rule as `activeFor`). */
export const inEffect = (now: Date) =>
  or(inArray(subscriptions.status, ACTIVE_STATUSES), and(eq(subscriptions.status, 'CANCELED'), gt(subscriptions.endsAt, now)));

/** The user's subscription in effect (the newest wins), optionally locked for the rest of the transaction. */
export async function currentSubscription(db: DbOrTx, userId: string, now: Date, lock = false): Promise<SubscriptionRow | undefined> {
  const query = db
    .select()
    .from(subscriptions)
    .where(and(eq(subscriptions.userId, userId), inEffect(now)))
    .orderBy(desc(subscriptions.startsAt), desc(subscriptions.id))
    .limit(1);
  const [row] = lock ? await query.for('update') : await query;
  return row;
}

/** One of the user's subscriptions (locked when asked); another user's, an unknown or a malformed id is 404. */
export async function ownSubscription(db: DbOrTx, userId: string, id: string, lock = false): Promise<SubscriptionRow> {
  let row: SubscriptionRow | undefined;
  if (isUuid(id)) {
    const query = db
      .select()
      .from(subscriptions)
      .where(and(eq(subscriptions.id, id), eq(subscriptions.userId, userId)));
    [row] = lock ? await query.for('update') : await query;
  }
  if (!row) throw notFound('No subscription with this id. See GET /v1/subscriptions for yours.');
  return row;
}

export async function lockSubscription(db: DbOrTx, id: string): Promise<SubscriptionRow | undefined> {
  const [row] = await db.select().from(subscriptions).where(eq(subscriptions.id, id)).for('update');
  return row;
}

/** The user's open change (awaiting payment or scheduled), locked; at most one exists (a unique index says so). */
export async function openChangeForUpdate(db: DbOrTx, userId: string): Promise<ChangeRow | undefined> {
  const [row] = await db
    .select()
    .from(subscriptionChanges)
    .where(and(eq(subscriptionChanges.userId, userId), inArray(subscriptionChanges.status, [...OPEN_CHANGE_STATUSES])))
    .for('update');
  return row;
}

export async function lockChange(db: DbOrTx, id: string): Promise<ChangeRow | undefined> {
  if (!isUuid(id)) return undefined;
  const [row] = await db.select().from(subscriptionChanges).where(eq(subscriptionChanges.id, id)).for('update');
  return row;
}

/** A free subscription (the sign-up plan and the like): no end, nothing paid. */
export const isFreeSubscription = (s: Pick<SubscriptionRow, 'endsAt' | 'cycleValueCents'>) => s.endsAt === null && s.cycleValueCents === 0;
