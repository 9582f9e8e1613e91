import { and, desc, eq, gt, isNull } from 'drizzle-orm';
import { securityEvents, sessions } from '../../db/schema/auth.js';
import { afterCursor, toPage } from '../../platform/http/pagination.js';
import { notFound } from '../../platform/http/errors.js';
import { recordSecurityEvent } from '../auth/security-events.js';
import type { ClientInfo } from '../../platform/http/client-info.js';
import { REFRESH_TOKEN_TTL_MS, revokeOtherSessions, revokeSession, type SessionRow } from '../auth/sessions.js';
import type { AccountDeps } from './deps.js';

type EventRow = typeof securityEvents.$inferSelect;

export const toSession = (s: SessionRow, currentSessionId: string | null) => ({
  id: s.id,
  device: s.device,
  userAgent: s.userAgent,
  ipAddress: s.ipAddress,
  location: s.location,
  lastSeenAt: s.lastSeenAt.toISOString(),
  createdAt: s.createdAt.toISOString(),
  current: s.id === currentSessionId,
});

export const toSecurityEvent = (e: EventRow) => ({
  id: e.id,
  kind: e.kind,
  ipAddress: e.ipAddress,
  userAgent: e.userAgent,
  metadata: e.metadata,
  createdAt: e.createdAt.toISOString(),
});

/** Signed-in devices and the security history of an account. */
export function createSecurityViews(deps: AccountDeps) {
  const { db, clock } = deps;

  /** A session is live while it is not revoked and its refresh token can still be used (30 days from the last sign-in or refresh). */
  const live = (userId: string, now: Date) =>
    and(eq(sessions.userId, userId), isNull(sessions.revokedAt), gt(sessions.lastSeenAt, new Date(now.getTime() - REFRESH_TOKEN_TTL_MS)));

  return {
    async listSessions(userId: string, currentSessionId: string | null) {
      const rows = await db.select().from(sessions).where(live(userId, clock.now())).orderBy(desc(sessions.lastSeenAt), desc(sessions.id));
      return { items: rows.map((s) => toSession(s, currentSessionId)) };
    },

    async revokeSession(userId: string, sessionId: string, client: ClientInfo): Promise<void> {
      const now = clock.now();
      const [session] = await db.select().from(sessions).where(and(live(userId, now), eq(sessions.id, sessionId)));
      if (!session) throw notFound('No active session with this id. It may already be signed out.');
      await db.transaction(async (tx) => {
        await revokeSession(tx, session.id, 'SESSION_REVOKED', now);
        await recordSecurityEvent(tx, { userId, kind: 'SESSION_REVOKED', client, at: now, metadata: { sessionId: session.id, device: session.device } });
      });
    },

    async revokeOthers(userId: string, currentSessionId: string | null, client: ClientInfo): Promise<{ ok: true; revoked: number }> {
      const now = clock.now();
      const revoked = await db.transaction(async (tx) => {
        const count = await revokeOtherSessions(tx, userId, currentSessionId, 'SESSION_REVOKED', now);
        if (count > 0) await recordSecurityEvent(tx, { userId, kind: 'SESSION_REVOKED', client, at: now, metadata: { scope: 'others', count } });
        return count;
      });
      return { ok: true, revoked };
    },

    async listEvents(userId: string, query: { limit: number; cursor?: string }) {
      const rows = await db
        .select()
        .from(securityEvents)
        .where(afterCursor(securityEvents.createdAt, securityEvents.id, query.cursor, eq(securityEvents.userId, userId)))
        .orderBy(desc(securityEvents.createdAt), desc(securityEvents.id))
        .limit(query.limit + 1);
      const page = toPage(rows, query.limit, (e) => ({ sort: e.createdAt.toISOString(), id: e.id }));
      return { items: page.items.map(toSecurityEvent), nextCursor: page.nextCursor };
    },
  };
}
