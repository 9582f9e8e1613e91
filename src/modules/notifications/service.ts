import { and, count, desc, eq, inArray, isNull } from 'drizzle-orm';
import { NOTIFICATION_TYPES, notificationPreferences, notifications } from '../../db/schema/notifications.js';
import type { Clock } from '../../platform/clock/clock.js';
import type { Db, DbOrTx } from '../../platform/db/database.js';
import { newestFirstPage } from '../../platform/http/pagination.js';

export type NotificationType = (typeof NOTIFICATION_TYPES)[number];
export type NotificationRow = typeof notifications.$inferSelect;
type PrefsRow = typeof notificationPreferences.$inferSelect;
export type NotificationPrefs = Omit<PrefsRow, 'userId' | 'updatedAt'>;

export const DEFAULT_NOTIFICATION_PREFS: NotificationPrefs = {
  emailJobUpdates: true,
  emailBillingAlerts: true,
  emailSecurityAlerts: true,
  emailMarketing: false,
  inAppCommunityActivity: true,
  inAppQuotaWarnings: true,
};

const PREF_KEYS = Object.keys(DEFAULT_NOTIFICATION_PREFS) as Array<keyof NotificationPrefs>;

/** In-app types a user can switch off, and the preference that switches each one. */
const IN_APP_PREF_OF: Partial<Record<NotificationType, keyof NotificationPrefs>> = {
  POST_LIKED: 'inAppCommunityActivity',
  NEW_FOLLOWER: 'inAppCommunityActivity',
  POST_COMMENTED: 'inAppCommunityActivity',
  QUOTA_WARNING: 'inAppQuotaWarnings',
  // Operator announcements are news about the service and its community (docs/decisions.md, "Announcements").
  ANNOUNCEMENT: 'inAppCommunityActivity',
};

export interface NewNotification {
  userId: string;
  type: NotificationType;
  title: string;
  body?: string | null;
  payload?: Record<string, unknown>;
}

export const toNotification = (n: NotificationRow) => ({
  id: n.id,
  type: n.type,
  title: n.title,
  body: n.body,
  payload: n.payload,
  readAt: n.readAt?.toISOString() ?? null,
  createdAt: n.createdAt.toISOString(),
});

export function createNotificationsService(deps: { db: Db; clock: Clock }) {
  const { db, clock } = deps;

  async function getPrefs(userId: string, tx: DbOrTx = db): Promise<NotificationPrefs> {
    const [row] = await tx.select().from(notificationPreferences).where(eq(notificationPreferences.userId, userId));
    if (!row) return { ...DEFAULT_NOTIFICATION_PREFS };
    return Object.fromEntries(PREF_KEYS.map((key) => [key, row[key]])) as NotificationPrefs;
  }

  return {
    getPrefs,

    async updatePrefs(userId: string, changes: Partial<NotificationPrefs>): Promise<NotificationPrefs> {
      const set = Object.fromEntries(PREF_KEYS.filter((key) => changes[key] !== undefined).map((key) => [key, changes[key]]));
      const now = clock.now();
      await db
        .insert(notificationPreferences)
        .values({ ...DEFAULT_NOTIFICATION_PREFS, ...set, userId, updatedAt: now })
        .onConflictDoUpdate({ target: notificationPreferences.userId, set: { ...set, updatedAt: now } });
      return getPrefs(userId);
    },

    /**
     * Puts a notification in the user's inbox, inside the caller's transaction when given one.
     * Returns null when the user switched this kind of notification off.
     */
    async notify(tx: DbOrTx, input: NewNotification): Promise<NotificationRow | null> {
      const pref = IN_APP_PREF_OF[input.type];
      if (pref && !(await getPrefs(input.userId, tx))[pref]) return null;
      const [row] = await tx
        .insert(notifications)
        .values({
          userId: input.userId,
          type: input.type,
          title: input.title,
          body: input.body ?? null,
          payload: input.payload ?? {},
          createdAt: clock.now(),
        })
        .returning();
      return row!;
    },

    /**
     * Puts one notification in each of these users' inboxes in one statement, inside the caller's transaction, leaving
     * out users who switched this kind off (unless `mandatory`). Returns how many were written.
     */
    async notifyMany(tx: DbOrTx, userIds: string[], input: Omit<NewNotification, 'userId'>, options: { mandatory?: boolean } = {}): Promise<number> {
      const pref = options.mandatory ? undefined : IN_APP_PREF_OF[input.type];
      let recipients = [...new Set(userIds)];
      if (pref && recipients.length > 0) {
        const optedOut = await tx
          .select({ userId: notificationPreferences.userId })
          .from(notificationPreferences)
          .where(and(inArray(notificationPreferences.userId, recipients), eq(notificationPreferences[pref], false)));
        const out = new Set(optedOut.map((row) => row.userId));
        recipients = recipients.filter((id) => !out.has(id));
      }
      if (recipients.length === 0) return 0;
      const createdAt = clock.now();
      await tx
        .insert(notifications)
        .values(
          recipients.map((userId) => ({ userId, type: input.type, title: input.title, body: input.body ?? null, payload: input.payload ?? {}, createdAt })),
        );
      return recipients.length;
    },

    async list(userId: string, query: { limit: number; cursor?: string; unreadOnly: boolean }) {
      const own = and(eq(notifications.userId, userId), query.unreadOnly ? isNull(notifications.readAt) : undefined);
      const page = await newestFirstPage(db, notifications, 'createdAt', own, query);
      const [unread] = await db
        .select({ n: count() })
        .from(notifications)
        .where(and(eq(notifications.userId, userId), isNull(notifications.readAt)));
      return { items: page.items.map(toNotification), nextCursor: page.nextCursor, unreadCount: unread?.n ?? 0 };
    },

    /** Marks one of the user's notifications read; a missing, foreign or already read id changes nothing. */
    async markRead(userId: string, id: string): Promise<void> {
      if (!UUID.test(id)) return;
      await db
        .update(notifications)
        .set({ readAt: clock.now() })
        .where(and(eq(notifications.id, id), eq(notifications.userId, userId), isNull(notifications.readAt)));
    },

    async markAllRead(userId: string): Promise<number> {
      const rows = await db
        .update(notifications)
        .set({ readAt: clock.now() })
        .where(and(eq(notifications.userId, userId), isNull(notifications.readAt)))
        .returning({ id: notifications.id });
      return rows.length;
    },

    /** Everything of the user's inbox, for the data export. */
    async exportFor(userId: string) {
      const rows = await db.select().from(notifications).where(eq(notifications.userId, userId)).orderBy(desc(notifications.createdAt));
      return { notifications: rows.map(toNotification), preferences: await getPrefs(userId) };
    },
  };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export type NotificationsService = ReturnType<typeof createNotificationsService>;
