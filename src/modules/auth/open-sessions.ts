import { eq } from 'drizzle-orm';
import { sessions } from '../../db/schema/auth.js';
import type { Db } from '../../platform/db/database.js';
import type { EventBus } from '../../platform/events/event-bus.js';
import { createInvalidatingCache } from '../../platform/events/invalidating-cache.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Whether a session is still open, asked by every request with an access token (its `sid`): read through a cache that
 * every instance empties of a session when it is revoked (a trigger announces it, migration 0012), so a revoked
 * session's access tokens stop working at once instead of living out their 15 minutes.
 */
export function createOpenSessions(deps: { db: Db; events?: EventBus }) {
  const open = createInvalidatingCache<boolean>({
    name: 'sessions',
    bus: deps.events,
    load: async (id) => {
      const [row] = await deps.db.select({ revokedAt: sessions.revokedAt }).from(sessions).where(eq(sessions.id, id));
      return row !== undefined && row.revokedAt === null;
    },
  });
  return {
    isOpen: (sessionId: string): Promise<boolean> => (UUID.test(sessionId) ? open.get(sessionId) : Promise.resolve(false)),
    /** Sessions this instance just ended: dropped here at once (the trigger tells the other instances on commit). */
    ended(sessionIds: string[]): void {
      for (const id of sessionIds) open.forget(id);
    },
  };
}

export type OpenSessions = ReturnType<typeof createOpenSessions>;
