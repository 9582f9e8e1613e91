import { and, gt, inArray, sql } from 'drizzle-orm';
import { loginAttempts } from '../../db/schema/auth.js';
import type { DbOrTx } from '../../platform/db/database.js';
import { MINUTE_MS } from '../../platform/clock/clock.js';

export const LOCKOUT_THRESHOLD = 10;
export const LOCKOUT_WINDOW_MS = 15 * MINUTE_MS;
export const LOCKOUT_DURATION_MS = 15 * MINUTE_MS;

/** One sign-in attempt: the email typed, the account it names (null when none does) and when it was made. */
export interface LoginAttempt {
  email: string;
  userId: string | null;
  at: Date;
}

/** Sorted, so every statement takes the row locks in the same order. */
const keysOf = (email: string, userId: string | null) => (userId ? [`email:${email}`, `user:${userId}`] : [`email:${email}`]);

/**
 * Whether an attempt may have its password or code checked. `position` is its place among the attempts counted in
 * the window (the highest over the email and the account); the attempt at `LOCKOUT_THRESHOLD` is the last one let in.
 */
export type Admission = { admitted: true; position: number } | { admitted: false; retryAt: Date };

interface AdmissionRow {
  key: string;
  admitted: boolean;
  counted: number;
  oldest_ms: number | null;
  locked_until_ms: number | null;
}

const rowsOf = <T>(result: unknown) => (result as { rows: T[] }).rows; // both drivers answer raw SQL with `{ rows }`

/**
 * Counts an attempt *before* its secret is checked, in one statement per call: for the email and the account, the
 * upsert drops attempts older than the window and appends this one only while the key is unlocked and below the
 * threshold. The row lock the upsert takes serialises parallel attempts on every instance, so no more than
 * `LOCKOUT_THRESHOLD` secrets are ever checked per window, however many requests arrive at once.
 */
export async function admitAttempt(db: DbOrTx, attempt: LoginAttempt): Promise<Admission> {
  const keys = keysOf(attempt.email, attempt.userId);
  const at = attempt.at.toISOString();
  const since = new Date(attempt.at.getTime() - LOCKOUT_WINDOW_MS).toISOString();
  const inWindow = sql`array(select t from unnest(a.attempts) as t where t > ${since}::timestamptz order by t)`;
  const open = sql`((a.locked_until is null or a.locked_until <= ${at}::timestamptz) and cardinality(${inWindow}) < ${LOCKOUT_THRESHOLD})`;
  const result = await db.execute(sql`
    insert into login_attempts as a (key, attempts, admitted)
    values ${sql.join(
      keys.map((key) => sql`(${key}, array[${at}::timestamptz], true)`),
      sql`, `,
    )}
    on conflict (key) do update set
      admitted = ${open},
      attempts = case when ${open} then ${inWindow} || ${at}::timestamptz else ${inWindow} end,
      locked_until = case when a.locked_until > ${at}::timestamptz then a.locked_until end
    returning key, admitted, cardinality(attempts) as counted,
      (extract(epoch from attempts[1]) * 1000)::float8 as oldest_ms,
      (extract(epoch from locked_until) * 1000)::float8 as locked_until_ms`);
  const rows = rowsOf<AdmissionRow>(result);
  if (rows.every((row) => row.admitted)) return { admitted: true, position: Math.max(...rows.map((row) => Number(row.counted))) };

  // Refused on one key but counted on another: give that place back, this attempt is not checked.
  const counted = rows.filter((row) => row.admitted).map((row) => row.key);
  if (counted.length > 0) await releasePlace(db, counted, attempt.at);
  const reopensAt = rows.map((row) =>
    Math.max(Number(row.locked_until_ms ?? 0), row.admitted || row.oldest_ms === null ? 0 : Number(row.oldest_ms) + LOCKOUT_WINDOW_MS),
  );
  return { admitted: false, retryAt: new Date(Math.max(...reopensAt)) };
}

/** Gives back the place an attempt took (its password was right; only failures count towards the lockout). */
export async function releaseAttempt(db: DbOrTx, attempt: LoginAttempt): Promise<void> {
  await releasePlace(db, keysOf(attempt.email, attempt.userId), attempt.at);
}

/** Removes one attempt made at `at` from each key (attempts made in the same millisecond are interchangeable). */
async function releasePlace(db: DbOrTx, keys: string[], at: Date): Promise<void> {
  const when = sql`${at.toISOString()}::timestamptz`;
  await db.execute(sql`
    update login_attempts
    set attempts = attempts[:array_position(attempts, ${when}) - 1] || attempts[array_position(attempts, ${when}) + 1:]
    where key in ${keys} and ${when} = any(attempts)`);
}

/**
 * Settles a counted attempt that failed: the one at the threshold locks the email and the account for
 * `LOCKOUT_DURATION_MS` and starts a fresh count. Returns the end of the new lock, or null when sign-in stays open.
 */
export async function settleFailure(db: DbOrTx, attempt: LoginAttempt, position: number): Promise<Date | null> {
  if (position < LOCKOUT_THRESHOLD) return null;
  const until = new Date(attempt.at.getTime() + LOCKOUT_DURATION_MS);
  await db
    .insert(loginAttempts)
    .values(keysOf(attempt.email, attempt.userId).map((key) => ({ key, attempts: [], lockedUntil: until })))
    .onConflictDoUpdate({
      target: loginAttempts.key,
      set: { attempts: sql`'{}'::timestamptz[]`, lockedUntil: sql`greatest(${loginAttempts.lockedUntil}, excluded.locked_until)` },
    });
  return until;
}

/** When sign-in is locked for this email or user, the moment it opens again. */
export async function lockedUntil(db: DbOrTx, email: string, userId: string | null, now: Date): Promise<Date | null> {
  const rows = await db
    .select({ lockedUntil: loginAttempts.lockedUntil })
    .from(loginAttempts)
    .where(and(inArray(loginAttempts.key, keysOf(email, userId)), gt(loginAttempts.lockedUntil, now)));
  if (rows.length === 0) return null;
  return new Date(Math.max(...rows.map((r) => r.lockedUntil!.getTime())));
}

/** A successful sign-in clears the counted failures (a lock that is running stays). */
export async function clearFailures(db: DbOrTx, email: string, userId: string): Promise<void> {
  await db
    .update(loginAttempts)
    .set({ attempts: sql`'{}'::timestamptz[]` })
    .where(inArray(loginAttempts.key, keysOf(email, userId)));
}

/** Lifts a lock and forgets the failures (a completed password reset proves who the user is). */
export async function unlock(db: DbOrTx, email: string, userId: string): Promise<void> {
  await db.delete(loginAttempts).where(inArray(loginAttempts.key, keysOf(email, userId)));
}
