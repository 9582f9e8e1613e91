import type { ClientInfo } from '../../platform/http/client-info.js';
import { notFound } from '../../platform/http/errors.js';
import { toSecurityEvent, type SessionRow } from '../auth/index.js';
import type { AccountDeps } from './deps.js';

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

/** Signed-in devices and the security history of an account. */
export function createSecurityViews(deps: AccountDeps) {
  const { db, clock, auth } = deps;

  return {
    async listSessions(userId: string, currentSessionId: string | null) {
      const rows = await auth.sessions.listLive(userId, clock.now());
      return { items: rows.map((s) => toSession(s, currentSessionId)) };
    },

    async revokeSession(userId: string, sessionId: string, client: ClientInfo): Promise<void> {
      const now = clock.now();
      const session = await auth.sessions.findLive(userId, sessionId, now);
      if (!session) throw notFound('No active session with this id. It may already be signed out.');
      await db.transaction(async (tx) => {
        await auth.sessions.revoke(session.id, 'SESSION_REVOKED', now, tx);
        await auth.securityEvents.record({ userId, kind: 'SESSION_REVOKED', client, at: now, metadata: { sessionId: session.id, device: session.device } }, tx);
      });
    },

    async revokeOthers(userId: string, currentSessionId: string | null, client: ClientInfo): Promise<{ ok: true; revoked: number }> {
      const now = clock.now();
      const revoked = await db.transaction(async (tx) => {
        const count = await auth.sessions.revokeOthers(userId, currentSessionId, 'SESSION_REVOKED', now, tx);
        if (count > 0) await auth.securityEvents.record({ userId, kind: 'SESSION_REVOKED', client, at: now, metadata: { scope: 'others', count } }, tx);
        return count;
      });
      return { ok: true, revoked };
    },

    async listEvents(userId: string, query: { limit: number; cursor?: string }) {
      const page = await auth.securityEvents.page(userId, query);
      return { items: page.items.map(toSecurityEvent), nextCursor: page.nextCursor };
    },
  };
}
