import { and, eq, isNull, sql } from 'drizzle-orm';
import { announcements } from '../../db/schema/announcements.js';
import type { Clock } from '../../platform/clock/clock.js';
import type { Db, Tx } from '../../platform/db/database.js';
import type { Jobs } from '../../platform/jobs/jobs.js';
import type { NotificationsService } from '../notifications/index.js';
import { findAnnouncement } from './lookup.js';
import type { AnnouncementRow } from './types.js';

export const NOTIFY_QUEUE = 'announcements.notify';

declare module '../../platform/jobs/jobs.js' {
  interface JobPayloads {
    /** Sends an announcement's ANNOUNCEMENT notifications to its audience, in batches (resumes where it stopped). */
    'announcements.notify': { announcementId: string };
  }
}

export interface NotificationRoundDeps {
  db: Db;
  clock: Clock;
  notifications: Pick<NotificationsService, 'notifyMany'>;
  queue: Pick<Jobs, 'send'>;
  /** The slug of the plan the user meters against, or null (the subscriptions module answers). */
  planOf: (userId: string) => Promise<string | null>;
  /** Active accounts in id order after `afterId` (the auth module answers): the notification round walks them. */
  userIdsAfter: (afterId: string | null, limit: number) => Promise<string[]>;
  /** Users per batch of the notification round (each batch commits with its progress). */
  batchSize: number;
}

/** The ANNOUNCEMENT notification round: requested once with the change, then sent batch after batch by its job. */
export function createNotificationRound(deps: NotificationRoundDeps) {
  const { db, clock, notifications, queue, batchSize } = deps;

  /** Marks the round requested (once) and queues it with the change; false when it was requested before. */
  async function requestNotification(tx: Tx, id: string): Promise<boolean> {
    const [marked] = await tx
      .update(announcements)
      .set({ notifyRequestedAt: clock.now() })
      .where(and(eq(announcements.id, id), isNull(announcements.notifyRequestedAt)))
      .returning({ id: announcements.id });
    if (!marked) return false;
    await queue.send(NOTIFY_QUEUE, { announcementId: id }, { tx, singletonKey: id });
    return true;
  }

  /**
   * One batch of the notification round: the next users after the stored cursor, narrowed to the audience, notified
   * in the transaction that moves the cursor, so a crash or a retry resumes after the last committed batch and nobody
   * is notified twice. Returns true when the round is over.
   */
  async function sendBatch(id: string): Promise<boolean> {
    const [a] = await db.select().from(announcements).where(eq(announcements.id, id));
    if (!a || !a.notifyRequestedAt || a.notifiedAt) return true;
    const ids = await deps.userIdsAfter(a.notifyCursor, batchSize);
    // Plans are read outside the transaction (the embedded database has a single connection).
    const recipients =
      a.audience === 'PLANS' ? (await Promise.all(ids.map(async (userId) => ((await planMatches(a, userId)) ? userId : null)))).filter((u) => u !== null) : ids;
    return db.transaction(async (tx) => {
      const current = await findAnnouncement(tx, id, true).catch(() => null);
      // Deleted meanwhile, or another worker moved the round on: read again.
      if (!current || current.notifiedAt) return true;
      if (current.notifyCursor !== a.notifyCursor) return false;
      const sent = await notifications.notifyMany(
        tx,
        recipients,
        { type: 'ANNOUNCEMENT', title: current.title, body: current.body, payload: { announcementId: id, level: current.level, link: current.link } },
        { mandatory: current.level === 'CRITICAL' },
      );
      const finished = ids.length < batchSize;
      await tx
        .update(announcements)
        .set({
          notifyCursor: ids.at(-1) ?? current.notifyCursor,
          notifiedCount: sql`${announcements.notifiedCount} + ${sent}`,
          ...(finished ? { notifiedAt: clock.now() } : {}),
        })
        .where(eq(announcements.id, id));
      return finished;
    });
  }

  const planMatches = async (a: AnnouncementRow, userId: string) => {
    const plan = await deps.planOf(userId);
    return plan !== null && a.plans.includes(plan);
  };

  return { requestNotification, sendBatch };
}
