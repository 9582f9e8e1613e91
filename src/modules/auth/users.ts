import { randomInt } from 'node:crypto';
import { and, eq, ne, sql } from 'drizzle-orm';
import { users } from '../../db/schema/auth.js';
import type { DbOrTx } from '../../platform/db/database.js';
import { isUniqueViolation } from '../../platform/db/errors.js';
import { conflict } from '../../platform/http/errors.js';

export type UserRow = typeof users.$inferSelect;
export type Role = UserRow['role'];

/**
 * The dedicated internal identity the admin playground runs under (spec B "Playground behaviour"). Its usage,
 * generations and payments are excluded from revenue analytics; it cannot sign in (no password is ever set).
 */
export const PLAYGROUND_IDENTITY_EMAIL = 'playground@storefront.internal';

/** The stored "hash" of an account without a password: not a PHC string, so no password ever verifies against it. */
export const NO_PASSWORD = '!no-password';

export const HANDLE_PATTERN = /^[a-zA-Z0-9_]{3,30}$/;

export const normalizeEmail = (email: string): string => email.trim().toLowerCase();

/** The user as sign-up, login and 2FA verify return it. */
export const toAuthUser = (u: UserRow) => ({ id: u.id, email: u.email, role: u.role, name: u.name, handle: u.handle, avatarUrl: u.avatarUrl });

/** The user as `/v1/users/me` returns it. */
export const toMeUser = (u: UserRow) => ({
  id: u.id,
  email: u.email,
  name: u.name,
  role: u.role,
  status: u.status,
  createdAt: u.createdAt.toISOString(),
  handle: u.handle,
  avatarUrl: u.avatarUrl,
  bio: u.bio,
});

export async function findActiveUserByEmail(db: DbOrTx, email: string): Promise<UserRow | undefined> {
  const [row] = await db.select().from(users).where(and(eq(users.email, normalizeEmail(email)), ne(users.status, 'DELETED')));
  return row;
}

export async function findActiveUserById(db: DbOrTx, id: string): Promise<UserRow | undefined> {
  const [row] = await db.select().from(users).where(and(eq(users.id, id), eq(users.status, 'ACTIVE')));
  return row;
}

export async function isHandleTaken(db: DbOrTx, handle: string, exceptUserId?: string): Promise<boolean> {
  const [row] = await db
    .select({ id: users.id })
    .from(users)
    .where(and(sql`lower(${users.handle}) = lower(${handle})`, exceptUserId ? ne(users.id, exceptUserId) : undefined));
  return row !== undefined;
}

/** A readable handle from the name or the email's local part; a numeric suffix when the plain one is taken. */
export function handleCandidates(name: string | null | undefined, email: string): string[] {
  const source = (name && name.trim()) || email.split('@')[0] || 'user';
  let base = source
    .normalize('NFKD')
    .replace(/[^a-zA-Z0-9_]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .replace(/_+/g, '_')
    .toLowerCase()
    .slice(0, 20);
  if (base.length < 3) base = `user_${base}`.replace(/_$/, '');
  if (base.length < 3) base = 'user';
  const suffixed = Array.from({ length: 6 }, (_, i) => `${base}_${randomInt(10 ** (3 + i), 10 ** (4 + i))}`);
  return [base, ...suffixed];
}

export interface NewUser {
  email: string;
  passwordHash: string;
  name: string | null;
  role?: Role;
  emailVerified?: boolean;
  createdAt: Date;
}

/** Inserts a user with a generated handle; 409 when the email is taken. */
export async function insertUser(db: DbOrTx, input: NewUser): Promise<UserRow> {
  const email = normalizeEmail(input.email);
  for (const handle of handleCandidates(input.name, email)) {
    if (await isHandleTaken(db, handle)) continue;
    try {
      // A savepoint, so a lost race for the handle does not abort the caller's transaction.
      return await db.transaction(async (sp) => {
        const [row] = await sp
          .insert(users)
          .values({ ...input, email, handle, updatedAt: input.createdAt })
          .returning();
        return row!;
      });
    } catch (err) {
      if (isUniqueViolation(err, 'users_email_active_key')) throw emailTaken();
      if (isUniqueViolation(err, 'users_handle_lower_key')) continue;
      throw err;
    }
  }
  throw new Error('Could not generate a free handle');
}

export const emailTaken = () => conflict('An account with this email already exists. Sign in instead, or use another email.');
