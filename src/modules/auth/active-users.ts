import type { Db } from '../../platform/db/database.js';
import type { EventBus } from '../../platform/events/event-bus.js';
import { createInvalidatingCache } from '../../platform/events/invalidating-cache.js';
import { findActiveUserById, type UserRow } from './users.js';

/**
 * The active user behind a request (`/v1/users/me`, the current-role check of admin routes, community writes), read
 * through a cache. Every write to `users` announces the id on `cache_users` (a trigger, migration 0028), so every
 * instance drops the row when it commits; this instance also drops it at once when it writes, so its next read never
 * sees the old row. A suspended, deleted or demoted account is refused within a notification's delay everywhere.
 */
export function createActiveUsers(deps: { db: Db; events?: EventBus }) {
  const cache = createInvalidatingCache<UserRow | null>({
    name: 'users',
    bus: deps.events,
    load: async (id) => (await findActiveUserById(deps.db, id)) ?? null,
  });
  return {
    get: (userId: string): Promise<UserRow | null> => cache.get(userId),
    /** This instance changed the user: dropped here now (the trigger tells the other instances on commit). */
    changed(userId: string): void {
      cache.forget(userId);
    },
  };
}

export type ActiveUsers = ReturnType<typeof createActiveUsers>;
