import { and, desc, eq, gt, isNull, or, sql } from 'drizzle-orm';
import { announcements, type ANNOUNCEMENT_AUDIENCES, type ANNOUNCEMENT_LEVELS } from '../../db/schema/announcements.js';
import type { Clock } from '../../platform/clock/clock.js';
import type { Db, DbOrTx, Tx } from '../../platform/db/database.js';
import type { EventBus } from '../../platform/events/event-bus.js';
import { createInvalidatingCache } from '../../platform/events/invalidating-cache.js';
import { defineJob, type JobDefinition, type Jobs } from '../../platform/jobs/jobs.js';
import { badRequest, conflict, notFound } from '../../platform/http/errors.js';
import { afterCursor, toPage } from '../../platform/http/pagination.js';
import type { AuditActor, AuditService } from '../audit/service.js';
import type { NotificationsService } from '../notifications/index.js';

export const NOTIFY_QUEUE = 'announcements.notify';

declare module '../../platform/jobs/jobs.js' {
  interface JobPayloads {
    /** Sends an announcement's ANNOUNCEMENT notifications to its audience, in batches (resumes where it stopped). */
    'announcements.notify': { announcementId: string };
  }
}

export type AnnouncementRow = typeof announcements.$inferSelect;
export type AnnouncementLevel = (typeof ANNOUNCEMENT_LEVELS)[number];
export type AnnouncementAudience = (typeof ANNOUNCEMENT_AUDIENCES)[number];

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

  async function find(id: string, tx: DbOrTx = db, lock = false): Promise<AnnouncementRow> {
    const rows = UUID.test(id)
      ? await (lock ? tx.select().from(announcements).where(eq(announcements.id, id)).for('update') : tx.select().from(announcements).where(eq(announcements.id, id)))
      : [];
    if (!rows[0]) throw notFound('There is no announcement with this id.');
    return rows[0];
  }

  /** The stored shape of a whole announcement, checked: plans exist and go with the PLANS audience, the window is ordered. */
  async function checked(merged: { audience: AnnouncementAudience; plans: string[]; startsAt: Date; endsAt: Date | null }) {
    if (merged.audience === 'PLANS' && merged.plans.length === 0) {
      throw badRequest('Name at least one plan (by slug) for the PLANS audience.', { field: 'plans' });
    }
    if (merged.audience !== 'PLANS' && merged.plans.length > 0) {
      throw badRequest('Plans go with the PLANS audience only; set audience to PLANS or leave plans out.', { field: 'plans' });
    }
    for (const slug of merged.plans) {
      if (!(await deps.planExists(slug))) throw badRequest(`There is no plan "${slug}". Name plans by their slug, as GET /v1/plans lists them.`, { field: 'plans' });
    }
    if (merged.endsAt && merged.endsAt <= merged.startsAt) throw badRequest('endsAt must be after startsAt.', { field: 'endsAt' });
  }

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

  async function change<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    try {
      return await db.transaction(work);
    } finally {
      cache.forget(ALL); // this instance reads its own write at once; the trigger tells the others on commit
    }
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
    const recipients = a.audience === 'PLANS' ? (await Promise.all(ids.map(async (userId) => ((await planMatches(a, userId)) ? userId : null)))).filter((u) => u !== null) : ids;
    return db.transaction(async (tx) => {
      const current = await find(id, tx, true).catch(() => null);
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
      const rows = await db
        .select()
        .from(announcements)
        .where(afterCursor(announcements.createdAt, announcements.id, query.cursor))
        .orderBy(desc(announcements.createdAt), desc(announcements.id))
        .limit(query.limit + 1);
      const page = toPage(rows, query.limit, (a) => ({ sort: a.createdAt.toISOString(), id: a.id }));
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
      await checked(values);
      if (input.notify && values.endsAt && values.endsAt <= now) throw badRequest('This announcement has already ended: there is nothing to notify about.', { field: 'notify' });
      return change(async (tx) => {
        const [row] = await tx
          .insert(announcements)
          .values({ ...values, createdBy: actor.userId, createdAt: now, updatedAt: now })
          .returning();
        await audit.record(actor, { action: 'announcement.create', targetType: 'announcement', targetId: row!.id, before: null, after: toAdminView(row!) }, tx);
        if (input.notify) {
          await requestNotification(tx, row!.id);
          await audit.record(actor, { action: 'announcement.notify', targetType: 'announcement', targetId: row!.id, after: { audience: row!.audience, plans: row!.plans } }, tx);
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
      await checked(merged);
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
        await audit.record(actor, { action: 'announcement.notify', targetType: 'announcement', targetId: id, after: { audience: row.audience, plans: row.plans } }, tx);
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

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export type AnnouncementsService = ReturnType<typeof createAnnouncementsService>;
