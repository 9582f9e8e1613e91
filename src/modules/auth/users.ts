import { randomBytes, randomInt } from 'node:crypto';
import { domainToASCII } from 'node:url';
import { and, eq, isNull, ne, sql } from 'drizzle-orm';
import { NO_PASSWORD, users, type InternalAccountKind } from '../../db/schema/auth.js';
import { bound, runBound } from '../../platform/db/bound.js';
import type { DbOrTx } from '../../platform/db/database.js';
import { isUniqueViolation } from '../../platform/db/errors.js';
import { badRequest, conflict } from '../../platform/http/errors.js';

export { NO_PASSWORD, type InternalAccountKind };

export type UserRow = typeof users.$inferSelect;

/** What other modules may show of a user (authors, public profiles). */
export type PublicUser = Pick<UserRow, 'id' | 'name' | 'handle' | 'avatarUrl' | 'bio' | 'status' | 'createdAt'>;
export type Role = UserRow['role'];

/** The domain of the service's own accounts: no sign-up, identity-provider sign-in or email change may take an address in it. */
export const RESERVED_EMAIL_DOMAIN = 'storefront.internal';

/**
 * The address the admin playground's internal account takes (spec B "Playground behaviour") unless an account made
 * before the domain was reserved holds it. The account is found by its `internalKind`, never by this address.
 */
export const PLAYGROUND_IDENTITY_EMAIL = `playground@${RESERVED_EMAIL_DOMAIN}`;

/**
 * Whether the address is in the reserved domain or under it, however it is spelt: any case, trailing dots, full-width
 * or compatibility characters, invisible characters, IDNA mappings. The domain is read as a mail system would.
 */
export function isReservedEmail(email: string): boolean {
  const folded = email
    .normalize('NFKC')
    .replace(/\p{Default_Ignorable_Code_Point}/gu, '')
    .trim()
    .toLowerCase();
  const at = folded.lastIndexOf('@');
  if (at < 0) return false;
  const written = folded.slice(at + 1);
  const domain = (domainToASCII(written) || written).replace(/\.+$/, '');
  return domain === RESERVED_EMAIL_DOMAIN || domain.endsWith(`.${RESERVED_EMAIL_DOMAIN}`);
}

export const reservedEmail = (field: string) =>
  badRequest(`Addresses at ${RESERVED_EMAIL_DOMAIN} belong to the service itself and cannot be used for an account. Use your own email address.`, { field });

/** Refuses (400) an address no account but the service's own may have. */
export function assertAssignableEmail(email: string, field = 'email'): void {
  if (isReservedEmail(email)) throw reservedEmail(field);
}

/** One of the service's own accounts: it cannot sign in by any means. */
export const isInternalAccount = (user: Pick<UserRow, 'internalKind'>): boolean => user.internalKind !== null;

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

/** The account with this address (not deleted); never one of the service's own accounts, which are found by kind. */
export async function findActiveUserByEmail(db: DbOrTx, email: string): Promise<UserRow | undefined> {
  const [row] = await db
    .select()
    .from(users)
    .where(and(eq(users.email, normalizeEmail(email)), ne(users.status, 'DELETED'), isNull(users.internalKind)));
  return row;
}

export async function findInternalUser(db: DbOrTx, kind: InternalAccountKind): Promise<UserRow | undefined> {
  const [row] = await db.select().from(users).where(eq(users.internalKind, kind));
  return row;
}

export async function findActiveUserById(db: DbOrTx, id: string): Promise<UserRow | undefined> {
  const [row] = await db
    .select()
    .from(users)
    .where(and(eq(users.id, id), eq(users.status, 'ACTIVE')));
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

type UserValues = Omit<typeof users.$inferInsert, 'handle' | 'updatedAt'> & { email: string; name: string | null; createdAt: Date };

/** Inserts the row with a generated handle (another one when a concurrent insert took it); other violations are thrown. */
async function insertWithHandle(db: DbOrTx, values: UserValues): Promise<UserRow> {
  for (const handle of handleCandidates(values.name, values.email)) {
    if (await isHandleTaken(db, handle)) continue;
    try {
      // A savepoint, so a lost race for the handle does not abort the caller's transaction.
      return await db.transaction(async (sp) => {
        const [row] = await sp
          .insert(users)
          .values({ ...values, handle, updatedAt: values.createdAt })
          .returning();
        return row!;
      });
    } catch (err) {
      if (isUniqueViolation(err, 'users_handle_lower_key')) continue;
      throw err;
    }
  }
  throw new Error('Could not generate a free handle');
}

/** Inserts a user with a generated handle; 400 for a reserved address, 409 when the email is taken. */
export async function insertUser(db: DbOrTx, input: NewUser): Promise<UserRow> {
  const email = normalizeEmail(input.email);
  assertAssignableEmail(email);
  try {
    return await insertWithHandle(db, { ...input, email });
  } catch (err) {
    if (isUniqueViolation(err, 'users_email_active_key')) throw emailTaken();
    throw err;
  }
}

export interface InternalAccountSpec {
  kind: InternalAccountKind;
  /** The reserved address it takes unless another account already holds it. */
  email: string;
  name: string;
}

/**
 * The service's own account of `spec.kind`, created when missing (no password, so it cannot sign in), and the ordinary
 * account holding its preferred address, if one does (taken before the domain was reserved). Such an account is never
 * adopted: the internal one takes another reserved address nobody can hold. Concurrent starts agree on one row.
 */
export async function ensureInternalUser(db: DbOrTx, spec: InternalAccountSpec, now: Date): Promise<{ user: UserRow; squatter: UserRow | undefined }> {
  const preferred = normalizeEmail(spec.email);
  if (!isReservedEmail(preferred)) throw new Error(`An internal account's address must be at ${RESERVED_EMAIL_DOMAIN} (got ${spec.email}).`);
  const squatter = await findActiveUserByEmail(db, preferred);
  const existing = await findInternalUser(db, spec.kind);
  if (existing) return { user: existing, squatter };
  // Unguessable, so no account made before the domain was reserved can be holding it too.
  const fallback = `${preferred.slice(0, preferred.lastIndexOf('@'))}+${randomBytes(8).toString('hex')}@${RESERVED_EMAIL_DOMAIN}`;
  for (const email of squatter ? [fallback] : [preferred, fallback]) {
    try {
      const user = await insertWithHandle(db, {
        email,
        passwordHash: NO_PASSWORD,
        name: spec.name,
        role: 'USER',
        emailVerified: true,
        internalKind: spec.kind,
        createdAt: now,
      });
      return { user, squatter };
    } catch (err) {
      const raced = await findInternalUser(db, spec.kind);
      if (raced) return { user: raced, squatter };
      if (!isUniqueViolation(err, 'users_email_active_key')) throw err;
    }
  }
  throw new Error(`Could not create the ${spec.kind} internal account: its addresses are taken.`);
}

export const emailTaken = () => conflict('An account with this email already exists. Sign in instead, or use another email.');

/** Profiles shown with every page of posts: a named statement, no query building (columns aliased as `PublicUser`). */
const PUBLIC_PROFILES_OF = `select id, name, handle, avatar_url as "avatarUrl", bio, status, created_at as "createdAt"
  from users where id = any($1::text[]::uuid[])`;

/** The public profiles of these users, by id (deleted users included, with their status). */
export async function readPublicProfiles(tx: DbOrTx, userIds: readonly string[]): Promise<Map<string, PublicUser>> {
  const { rows } = await runBound<PublicUser>(tx, bound(PUBLIC_PROFILES_OF, [[...new Set(userIds)]]));
  return new Map(rows.map((r) => [r.id, r]));
}
