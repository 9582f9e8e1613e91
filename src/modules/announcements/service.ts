import { desc, eq, gt, isNull, or } from 'drizzle-orm';
import { announcements } from '../../db/schema/announcements.js';
import type { Clock } from '../../platform/clock/clock.js';
import type { Db, DbOrTx, Tx } from '../../platform/db/database.js';
import type { EventBus } from '../../platform/events/event-bus.js';
import { createInvalidatingCache } from '../../platform/events/invalidating-cache.js';
import { defineJob, type JobDefinition, type Jobs } from '../../platform/jobs/jobs.js';
import { badRequest, conflict, notFound } from '../../platform/http/errors.js';
import { newestFirstPage } from '../../platform/http/pagination.js';
import type { AuditActor, AuditService } from '../audit/service.js';
import type { NotificationsService } from '../notifications/index.js';
import { checkAnnouncement } from './checks.js';
import { findAnnouncement } from './lookup.js';
import { createNotificationRound, NOTIFY_QUEUE } from './notification-round.js';
import type { AnnouncementAudience, AnnouncementLevel, AnnouncementRow } from './types.js';

export interface AnnouncementInput {
  title: string;
  body: string;
  level?: AnnouncementLevel;
  link?: string | null;
  audience?: AnnouncementAudience;
  plans?: string[];
  startsAt?: string;
  endsAt?: string | null;
  notify?: boolean;
}

export type AnnouncementChanges = Partial<Omit<AnnouncementInput, 'notify'>>;

export interface AnnouncementsServiceDeps {
  db: Db;
  clock: Clock;
  audit: Pick<AuditService, 'record'>;
  notifications: Pick<NotificationsService, 'notifyMany'>;
  queue: Pick<Jobs, 'send'>;
  /** The slug of the plan the user meters against, or null (the subscriptions module answers). */
  planOf: (userId: string) => Promise<string | null>;
  planExists: (slug: string) => Promise<boolean>;
  /** Active accounts in id order after `afterId` (the auth module answers): the notification round walks them. */
  userIdsAfter: (afterId: string | null, limit: number) => Promise<string[]>;
  events?: EventBus;
  /** Users per batch of the notification round (each batch commits with its progress). */
  batchSize?: number;
}

const ALL = 'all';
const LEVEL_ORDER: Record<AnnouncementLevel, number> = { CRITICAL: 0, WARNING: 1, INFO: 2 };

/** A banner as every viewer sees it. */
export const toBanner = (a: AnnouncementRow) => ({
  id: a.id,
  title: a.title,
  body: a.body,
  level: a.level,
  link: a.link,
  startsAt: a.startsAt.toISOString(),
  endsAt: a.endsAt?.toISOString() ?? null,
});

/** The operator's view: the banner, who sees it and how far its notification round went. */
export const toAdminView = (a: AnnouncementRow) => ({
  ...toBanner(a),
  audience: a.audience,
  plans: a.plans,
  notification: {
    requestedAt: a.notifyRequestedAt?.toISOString() ?? null,
    sentAt: a.notifiedAt?.toISOString() ?? null,
    recipients: a.notifiedCount,
  },
  createdBy: a.createdBy,
  createdAt: a.createdAt.toISOString(),
  updatedAt: a.updatedAt.toISOString(),
});

export type AnnouncementView = ReturnType<typeof toAdminView>;

/**
 * Announcements: banners for their audience between `startsAt` and `endsAt`, read from an in-process copy of the
 * banners that have not ended (dropped on every write, on every instance, by a statement trigger); and, when the
 * operator asks, one ANNOUNCEMENT notification per member of the audience, sent in the background exactly once.
 */
export function createAnnouncementsService(deps: AnnouncementsServiceDeps) {
  const { db, clock, audit, notifications, queue } = deps;
  const batchSize = deps.batchSize ?? 500;
  const cache = createInvalidatingCache<AnnouncementRow[]>({
    name: 'announcements',
    bus: deps.events,
    now: () => clock.now().getTime(),
    load: async () =>
      db
        .select()
        .from(announcements)
        .where(or(isNull(announcements.endsAt), gt(announcements.endsAt, clock.now())))
        .orderBy(desc(announcements.startsAt), desc(announcements.id)),
  });

  const find = (id: string, tx: DbOrTx = db, lock = false) => findAnnouncement(tx, id, lock);
  const { requestNotification, sendBatch } = createNotificationRound({
    db,
    clock,
    notifications,
    queue,
    planOf: deps.planOf,
    userIdsAfter: deps.userIdsAfter,
    batchSize,
  });

  async function change<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    try {
      return await db.transaction(work);
    } finally {
      cache.forget(ALL); // this instance reads its own write at once; the trigger tells the others on commit
    }
  }

  const service = {
    /** The banners showing now for the viewer (null: anonymous), the most severe first, then the newest. */
    async active(viewer: { userId: string } | null) {
      const now = clock.now();
      const live = (await cache.get(ALL)).filter((a) => a.startsAt <= now && (!a.endsAt || a.endsAt > now));
      let plan: Promise<string | null> | undefined;
      const visible = [];
      for (const a of live) {
        if (a.audience === 'EVERYONE' || (viewer && a.audience === 'SIGNED_IN')) visible.push(a);
        else if (viewer && a.audience === 'PLANS') {
          const slug = await (plan ??= deps.planOf(viewer.userId));
          if (slug !== null && a.plans.includes(slug)) visible.push(a);
        }
      }
      visible.sort((x, y) => LEVEL_ORDER[x.level] - LEVEL_ORDER[y.level]);
      return { items: visible.map(toBanner) };
    },

    /** Every announcement, newest first, cursor-paged. */
    async list(query: { limit: number; cursor?: string }) {
      const page = await newestFirstPage(db, announcements, 'createdAt', undefined, query);
      return { items: page.items.map(toAdminView), nextCursor: page.nextCursor };
    },

    get: async (id: string) => toAdminView(await find(id)),

    async create(actor: AuditActor, input: AnnouncementInput): Promise<AnnouncementView> {
      const now = clock.now();
      const values = {
        title: input.title,
        body: input.body,
        level: input.level ?? 'INFO',
        link: input.link ?? null,
        audience: input.audience ?? 'EVERYONE',
        plans: [...new Set(input.plans ?? [])],
        startsAt: input.startsAt ? new Date(input.startsAt) : now,
        endsAt: input.endsAt ? new Date(input.endsAt) : null,
      };
      await checkAnnouncement(deps, values);
      if (input.notify && values.endsAt && values.endsAt <= now)
        throw badRequest('This announcement has already ended: there is nothing to notify about.', { field: 'notify' });
      return change(async (tx) => {
        const [row] = await tx
          .insert(announcements)
          .values({ ...values, createdBy: actor.userId, createdAt: now, updatedAt: now })
          .returning();
        await audit.record(actor, { action: 'announcement.create', targetType: 'announcement', targetId: row!.id, before: null, after: toAdminView(row!) }, tx);
        if (input.notify) {
          await requestNotification(tx, row!.id);
          await audit.record(
            actor,
            { action: 'announcement.notify', targetType: 'announcement', targetId: row!.id, after: { audience: row!.audience, plans: row!.plans } },
            tx,
          );
          return toAdminView(await find(row!.id, tx));
        }
        return toAdminView(row!);
      });
    },

    async update(actor: AuditActor, id: string, changes: AnnouncementChanges): Promise<AnnouncementView> {
      const before = await find(id);
      const merged = {
        title: changes.title ?? before.title,
        body: changes.body ?? before.body,
        level: changes.level ?? before.level,
        link: changes.link !== undefined ? changes.link : before.link,
        audience: changes.audience ?? before.audience,
        plans: changes.plans !== undefined ? [...new Set(changes.plans)] : changes.audience && changes.audience !== 'PLANS' ? [] : before.plans,
        startsAt: changes.startsAt ? new Date(changes.startsAt) : before.startsAt,
        endsAt: changes.endsAt !== undefined ? (changes.endsAt ? new Date(changes.endsAt) : null) : before.endsAt,
      };
      await checkAnnouncement(deps, merged);
      return change(async (tx) => {
        const locked = await find(id, tx, true);
        const [row] = await tx
          .update(announcements)
          .set({ ...merged, updatedAt: clock.now() })
          .where(eq(announcements.id, id))
          .returning();
        const view = toAdminView(row!);
        await audit.record(actor, { action: 'announcement.update', targetType: 'announcement', targetId: id, before: toAdminView(locked), after: view }, tx);
        return view;
      });
    },

    async remove(actor: AuditActor, id: string): Promise<void> {
      await find(id);
      await change(async (tx) => {
        const [removed] = await tx.delete(announcements).where(eq(announcements.id, id)).returning();
        if (!removed) throw notFound('There is no announcement with this id.');
        await audit.record(actor, { action: 'announcement.delete', targetType: 'announcement', targetId: id, before: toAdminView(removed), after: null }, tx);
      });
    },

    /**
     * Sends the ANNOUNCEMENT notification to the audience, once: the first call queues the round (audited), a repeat
     * or a retry only answers its progress. An announcement that has ended is refused.
     */
    async notify(actor: AuditActor, id: string): Promise<{ queued: boolean; announcement: AnnouncementView }> {
      return change(async (tx) => {
        const row = await find(id, tx, true);
        if (row.notifyRequestedAt) return { queued: false, announcement: toAdminView(row) };
        if (row.endsAt && row.endsAt <= clock.now()) throw conflict('This announcement has already ended: there is nothing to notify about.');
        await requestNotification(tx, id);
        await audit.record(
          actor,
          { action: 'announcement.notify', targetType: 'announcement', targetId: id, after: { audience: row.audience, plans: row.plans } },
          tx,
        );
        return { queued: true, announcement: toAdminView(await find(id, tx)) };
      });
    },

    /** The job handler: runs the round to its end, batch after batch (a retry resumes after the last batch). */
    async runNotificationRound(id: string): Promise<void> {
      while (!(await sendBatch(id))) {
        // next batch
      }
    },

    jobs(): JobDefinition[] {
      return [
        defineJob({
          name: NOTIFY_QUEUE,
          options: { retryLimit: 10, expireInSeconds: 3600 },
          handler: async ({ announcementId }) => service.runNotificationRound(announcementId),
        }) as JobDefinition,
      ];
    },
  };
  return service;
}

export type AnnouncementsService = ReturnType<typeof createAnnouncementsService>;
