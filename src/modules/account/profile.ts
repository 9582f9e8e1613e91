import { eq } from 'drizzle-orm';
import { userPreferences } from '../../db/schema/account.js';
import type { DbOrTx, Tx } from '../../platform/db/database.js';
import { badRequest, conflict, unauthorized } from '../../platform/http/errors.js';
import { HANDLE_PATTERN, type ProfileChanges, type UserRow } from '../auth/index.js';
import type { AccountDeps } from './deps.js';

type PreferencesRow = typeof userPreferences.$inferSelect;
export type Preferences = Omit<PreferencesRow, 'userId' | 'updatedAt'>;
export type ProfileVisibility = Preferences['profileVisibility'];

/**
 * Work of other modules when a user changes `profileVisibility`, run in the transaction that changes it (the community
 * gives the author's posts and works the new audience), so the new audience holds the moment the change answers.
 */
export type ProfileVisibilityChangedHook = (tx: Tx, userId: string, visibility: ProfileVisibility) => Promise<void>;

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

/** `visibilityChanged`: raises the event to the other modules' handlers (`account.profileVisibilityChanged`). */
export function createProfile(deps: AccountDeps, visibilityChanged: ProfileVisibilityChangedHook) {
  const { db, clock, auth } = deps;

  /**
   * The user's preferences row, created with the defaults when missing, then locked (`share` or `update`) until `tx`
   * ends. Creating it first gives a user who never saved preferences a row to lock: with none, a reader's lock would
   * take nothing and a concurrent first change would not wait for it.
   */
  async function lockedRow(tx: Tx, userId: string, strength: 'share' | 'update'): Promise<PreferencesRow> {
    await tx
      .insert(userPreferences)
      .values({ ...DEFAULT_PREFERENCES, userId, updatedAt: clock.now() })
      .onConflictDoNothing();
    const [row] = await tx.select().from(userPreferences).where(eq(userPreferences.userId, userId)).for(strength);
    return row!;
  }

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

    /** Who sees the user's profile and posts (for the community). */
    async visibilityOf(userId: string, tx: DbOrTx = db): Promise<ProfileVisibility> {
      const [row] = await tx.select({ visibility: userPreferences.profileVisibility }).from(userPreferences).where(eq(userPreferences.userId, userId));
      return row?.visibility ?? DEFAULT_PREFERENCES.profileVisibility;
    },

    /**
     * The same, read for a write that must carry it (a new post): the row stays share-locked until `tx` ends, so a
     * concurrent change of the preference waits for that write and its hooks then see it.
     */
    async holdVisibility(tx: Tx, userId: string): Promise<ProfileVisibility> {
      return (await lockedRow(tx, userId, 'share')).profileVisibility;
    },

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
      await db.transaction(async (tx) => {
        const before = await lockedRow(tx, userId, 'update');
        await tx
          .update(userPreferences)
          .set({ ...set, updatedAt: clock.now() })
          .where(eq(userPreferences.userId, userId));
        const visibility = set.profileVisibility;
        if (visibility !== undefined && visibility !== before.profileVisibility) await visibilityChanged(tx, userId, visibility);
      });
      return getPreferences(userId);
    },
  };
}
