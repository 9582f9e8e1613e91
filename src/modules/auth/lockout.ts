import { and, count, eq, gt, inArray, or } from 'drizzle-orm';
import { loginFailures, loginLocks } from '../../db/schema/auth.js';
import type { DbOrTx } from '../../platform/db/database.js';
import { MINUTE_MS } from '../../platform/clock/clock.js';

export const LOCKOUT_THRESHOLD = 10;
export const LOCKOUT_WINDOW_MS = 15 * MINUTE_MS;
export const LOCKOUT_DURATION_MS = 15 * MINUTE_MS;

const lockKeys = (email: string, userId: string | null) => (userId ? [`email:${email}`, `user:${userId}`] : [`email:${email}`]);

/** When sign-in is locked for this email or user, the moment it opens again. */
export async function lockedUntil(db: DbOrTx, email: string, userId: string | null, now: Date): Promise<Date | null> {
  const rows = await db
    .select({ lockedUntil: loginLocks.lockedUntil })
    .from(loginLocks)
    .where(and(inArray(loginLocks.key, lockKeys(email, userId)), gt(loginLocks.lockedUntil, now)));
  if (rows.length === 0) return null;
  return new Date(Math.max(...rows.map((r) => r.lockedUntil.getTime())));
}

/**
 * Records a failed attempt and locks when the email or the user reached the threshold inside the window.
 * Returns the end of the new lock, or null when sign-in stays open.
 */
export async function recordFailure(
  db: DbOrTx,
  attempt: { email: string; userId: string | null; ip: string | null },
  now: Date,
): Promise<Date | null> {
  await db.insert(loginFailures).values({ email: attempt.email, userId: attempt.userId, ipAddress: attempt.ip, createdAt: now });
  const since = new Date(now.getTime() - LOCKOUT_WINDOW_MS);
  const [byEmail] = await db
    .select({ n: count() })
    .from(loginFailures)
    .where(and(eq(loginFailures.email, attempt.email), gt(loginFailures.createdAt, since)));
  const [byUser] = attempt.userId
    ? await db
        .select({ n: count() })
        .from(loginFailures)
        .where(and(eq(loginFailures.userId, attempt.userId), gt(loginFailures.createdAt, since)))
    : [{ n: 0 }];
  if (Math.max(byEmail?.n ?? 0, byUser?.n ?? 0) < LOCKOUT_THRESHOLD) return null;
  const until = new Date(now.getTime() + LOCKOUT_DURATION_MS);
  for (const key of lockKeys(attempt.email, attempt.userId)) {
    await db.insert(loginLocks).values({ key, lockedUntil: until }).onConflictDoUpdate({ target: loginLocks.key, set: { lockedUntil: until } });
  }
  // The lock starts a fresh count: after it ends, another full series of failures is needed to lock again.
  await db
    .delete(loginFailures)
    .where(or(eq(loginFailures.email, attempt.email), attempt.userId ? eq(loginFailures.userId, attempt.userId) : undefined));
  return until;
}

/** A successful sign-in clears the failure history. */
export async function clearFailures(db: DbOrTx, email: string, userId: string): Promise<void> {
  await db.delete(loginFailures).where(or(eq(loginFailures.email, email), eq(loginFailures.userId, userId)));
}

/** Lifts a lock and forgets the failures (a completed password reset proves who the user is). */
export async function unlock(db: DbOrTx, email: string, userId: string): Promise<void> {
  await db.delete(loginLocks).where(inArray(loginLocks.key, lockKeys(email, userId)));
  await clearFailures(db, email, userId);
}
