import type { Db } from '../../platform/db/database.js';
import type { EventBus } from '../../platform/events/event-bus.js';
import { createInvalidatingCache } from '../../platform/events/invalidating-cache.js';
import { findActiveUserById, readPublicProfiles, type PublicUser, type UserRow } from './users.js';

/**
 * The active user behind a request (`/v1/users/me`, the current-role check of admin routes, community writes), read
 * through a cache. Every write to `users` announces the id on `cache_users` (a trigger, migration 0028), so every
 * instance drops the row when it commits; this instance also drops it at once when it writes, so its next read never
 * sees the old row. A suspended, deleted or demoted account is refused within a notification's delay everywhere.
 * The public profiles shown with posts (every feed page's authors) are kept the same way.
 */
export function createActiveUsers(deps: { db: Db; events?: EventBus }) {
  const cache = createInvalidatingCache<UserRow | null>({
    name: 'users',
    bus: deps.events,
    load: async (id) => (await findActiveUserById(deps.db, id)) ?? null,
  });
  const profiles = createInvalidatingCache<PublicUser | null>({
    name: 'users',
    bus: deps.events,
    load: async (id) => (await readPublicProfiles(deps.db, [id])).get(id) ?? null,
  });
  return {
    get: (userId: string): Promise<UserRow | null> => cache.get(userId),
    /** This instance changed the user: dropped here now (the trigger tells the other instances on commit). */
    changed(userId: string): void {
      cache.forget(userId);
      profiles.forget(userId);
    },
    /** The public profiles of these users (deleted ones included, with their status); unknown ids are left out. */
    async profilesOf(userIds: readonly string[]): Promise<Map<string, PublicUser>> {
      const found = await profiles.getMany(userIds, (missing) => readPublicProfiles(deps.db, missing));
      const known = new Map<string, PublicUser>();
      for (const [id, profile] of found) if (profile) known.set(id, profile);
      return known;
    },
  };
}

export type ActiveUsers = ReturnType<typeof createActiveUsers>;
