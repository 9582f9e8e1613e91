import { eq } from 'drizzle-orm';
import { userPreferences } from '../../db/schema/account.js';
import type { DbOrTx } from '../../platform/db/database.js';
import { badRequest, conflict, unauthorized } from '../../platform/http/errors.js';
import { HANDLE_PATTERN, type ProfileChanges, type UserRow } from '../auth/index.js';
import type { AccountDeps } from './deps.js';

type PreferencesRow = typeof userPreferences.$inferSelect;
export type Preferences = Omit<PreferencesRow, 'userId' | 'updatedAt'>;

export const DEFAULT_PREFERENCES: Preferences = {
  locale: 'en',
  timezone: 'UTC',
  theme: 'system',
  profileVisibility: 'PUBLIC',
  allowDmFromAnyone: true,
  defaultGenerationVisibility: 'PRIVATE',
};
const PREFERENCE_KEYS = Object.keys(DEFAULT_PREFERENCES) as Array<keyof Preferences>;

/** The public row of a user, as the profile update returns it. */
export const toPublicUser = (u: UserRow) => ({
  id: u.id,
  name: u.name,
  handle: u.handle,
  avatarUrl: u.avatarUrl,
  bio: u.bio,
  createdAt: u.createdAt.toISOString(),
});

const handleTaken = () => conflict('This handle is already taken. Try another one.', { field: 'handle' });

function validTimezone(timezone: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: timezone });
    return true;
  } catch {
    return false;
  }
}

function canonicalLocale(locale: string): string | null {
  try {
    return Intl.getCanonicalLocales(locale)[0] ?? null;
  } catch {
    return null;
  }
}

export function createProfile(deps: AccountDeps) {
  const { db, clock, auth } = deps;

  async function activeUser(userId: string) {
    const user = await auth.users.findActiveById(userId);
    if (!user) throw unauthorized('Your session has ended. Sign in again.');
    return user;
  }

  /** Inside the caller's transaction when given one (the library reads the default visibility while saving). */
  async function getPreferences(userId: string, tx: DbOrTx = db): Promise<Preferences> {
    const [row] = await tx.select().from(userPreferences).where(eq(userPreferences.userId, userId));
    if (!row) return { ...DEFAULT_PREFERENCES };
    return Object.fromEntries(PREFERENCE_KEYS.map((key) => [key, row[key]])) as Preferences;
  }

  return {
    getPreferences,

    async updateProfile(userId: string, changes: { handle?: string; avatarUrl?: string | null; bio?: string | null }) {
      await activeUser(userId);
      const set: ProfileChanges = {};
      if (changes.handle !== undefined) {
        if (!HANDLE_PATTERN.test(changes.handle)) throw badRequest('A handle has 3 to 30 letters, digits or underscores.', { field: 'handle' });
        if (await auth.users.isHandleTaken(changes.handle, userId)) throw handleTaken();
        set.handle = changes.handle;
      }
      if (changes.avatarUrl !== undefined) set.avatarUrl = changes.avatarUrl;
      if (changes.bio !== undefined) set.bio = changes.bio === null || changes.bio.trim() === '' ? null : changes.bio.trim();
      const row = await auth.users.updateProfile(userId, set, clock.now());
      if (row === 'handle-taken') throw handleTaken();
      return toPublicUser(row);
    },

    async updatePreferences(userId: string, changes: Partial<Preferences>): Promise<Preferences> {
      await activeUser(userId);
      const set: Partial<Preferences> = {};
      for (const key of PREFERENCE_KEYS) if (changes[key] !== undefined) (set as Record<string, unknown>)[key] = changes[key];
      if (set.timezone !== undefined && !validTimezone(set.timezone)) {
        throw badRequest(`"${set.timezone}" is not a known time zone. Use an IANA name such as "Europe/Berlin" or "UTC".`, { field: 'timezone' });
      }
      if (set.locale !== undefined) {
        const locale = canonicalLocale(set.locale);
        if (!locale) throw badRequest(`"${set.locale}" is not a valid language tag. Use a tag such as "en" or "pt-BR".`, { field: 'locale' });
        set.locale = locale;
      }
      const now = clock.now();
      await db
        .insert(userPreferences)
        .values({ ...DEFAULT_PREFERENCES, ...set, userId, updatedAt: now })
        .onConflictDoUpdate({ target: userPreferences.userId, set: { ...set, updatedAt: now } });
      return getPreferences(userId);
    },
  };
}
