import { randomBytes } from 'node:crypto';
import { and, eq, inArray, isNull, ne } from 'drizzle-orm';
import { refreshTokens, securityEvents, sessions } from '../../db/schema/auth.js';
import type { DbOrTx } from '../../platform/db/database.js';
import { DAY_MS } from '../../platform/clock/clock.js';
import { hashToken } from '../../platform/crypto/secrets.js';
import type { ClientInfo } from '../../platform/http/client-info.js';
import { describeDevice } from './device.js';

export const REFRESH_TOKEN_TTL_MS = 30 * DAY_MS;

export type RevokeReason = NonNullable<(typeof refreshTokens.$inferSelect)['revokedReason']>;
export type SessionRow = typeof sessions.$inferSelect;
export type RefreshTokenRow = typeof refreshTokens.$inferSelect;

const newRefreshToken = (): string => randomBytes(32).toString('base64url');

/**
 * Opens (or reuses, for the same device) a session and issues its refresh token.
 * A device is the pair of user agent and IP address; signing in again on it replaces its previous refresh token.
 */
export async function openSession(db: DbOrTx, userId: string, client: ClientInfo, now: Date) {
  const [existing] = await db
    .select()
    .from(sessions)
    .where(
      and(
        eq(sessions.userId, userId),
        isNull(sessions.revokedAt),
        client.userAgent === null ? isNull(sessions.userAgent) : eq(sessions.userAgent, client.userAgent),
        client.ip === null ? isNull(sessions.ipAddress) : eq(sessions.ipAddress, client.ip),
      ),
    )
    .limit(1);
  let session: SessionRow;
  if (existing) {
    await revokeSessionTokens(db, existing.id, 'NEW_LOGIN', now);
    [session] = (await db.update(sessions).set({ lastSeenAt: now }).where(eq(sessions.id, existing.id)).returning()) as [SessionRow];
  } else {
    [session] = (await db
      .insert(sessions)
      .values({ userId, device: describeDevice(client.userAgent), userAgent: client.userAgent, ipAddress: client.ip, createdAt: now, lastSeenAt: now })
      .returning()) as [SessionRow];
  }
  const refreshToken = await issueRefreshToken(db, session, now);
  return { session, refreshToken };
}

export async function issueRefreshToken(db: DbOrTx, session: SessionRow, now: Date): Promise<string> {
  const token = newRefreshToken();
  await db.insert(refreshTokens).values({
    sessionId: session.id,
    userId: session.userId,
    tokenHash: hashToken(token),
    createdAt: now,
    expiresAt: new Date(now.getTime() + REFRESH_TOKEN_TTL_MS),
  });
  return token;
}

export async function findRefreshToken(db: DbOrTx, token: string): Promise<RefreshTokenRow | undefined> {
  const [row] = await db
    .select()
    .from(refreshTokens)
    .where(eq(refreshTokens.tokenHash, hashToken(token)));
  return row;
}

/** Marks a still-valid token used; false when another request rotated or revoked it first. */
export async function consumeRefreshToken(db: DbOrTx, id: string, reason: RevokeReason, now: Date): Promise<boolean> {
  const rows = await db
    .update(refreshTokens)
    .set({ revokedAt: now, revokedReason: reason })
    .where(and(eq(refreshTokens.id, id), isNull(refreshTokens.revokedAt)))
    .returning({ id: refreshTokens.id });
  return rows.length === 1;
}

async function revokeSessionTokens(db: DbOrTx, sessionId: string, reason: RevokeReason, now: Date): Promise<void> {
  await db
    .update(refreshTokens)
    .set({ revokedAt: now, revokedReason: reason })
    .where(and(eq(refreshTokens.sessionId, sessionId), isNull(refreshTokens.revokedAt)));
}

/** Ends one session and its refresh tokens; returns the ended session's id (none when it had ended already). */
export async function revokeSession(db: DbOrTx, sessionId: string, reason: RevokeReason, now: Date): Promise<string[]> {
  await revokeSessionTokens(db, sessionId, reason, now);
  const ended = await db
    .update(sessions)
    .set({ revokedAt: now })
    .where(and(eq(sessions.id, sessionId), isNull(sessions.revokedAt)))
    .returning({ id: sessions.id });
  return ended.map((s) => s.id);
}

/** Signs the user out everywhere: every session and every refresh token; returns the ended sessions' ids. */
export async function revokeAllSessions(db: DbOrTx, userId: string, reason: RevokeReason, now: Date): Promise<string[]> {
  await db
    .update(refreshTokens)
    .set({ revokedAt: now, revokedReason: reason })
    .where(and(eq(refreshTokens.userId, userId), isNull(refreshTokens.revokedAt)));
  const ended = await db
    .update(sessions)
    .set({ revokedAt: now })
    .where(and(eq(sessions.userId, userId), isNull(sessions.revokedAt)))
    .returning({ id: sessions.id });
  return ended.map((s) => s.id);
}

export async function touchSession(db: DbOrTx, sessionId: string, client: ClientInfo, now: Date): Promise<void> {
  await db.update(sessions).set({ lastSeenAt: now, ipAddress: client.ip }).where(eq(sessions.id, sessionId));
}

export async function findSession(db: DbOrTx, sessionId: string): Promise<SessionRow | undefined> {
  const [row] = await db.select().from(sessions).where(eq(sessions.id, sessionId));
  return row;
}

/** Signs the user out of every device but one (the caller's); returns the ended sessions' ids. */
export async function revokeOtherSessions(db: DbOrTx, userId: string, keepSessionId: string | null, reason: RevokeReason, now: Date): Promise<string[]> {
  const others = and(eq(sessions.userId, userId), isNull(sessions.revokedAt), keepSessionId ? ne(sessions.id, keepSessionId) : undefined);
  const ended = await db.update(sessions).set({ revokedAt: now }).where(others).returning({ id: sessions.id });
  if (ended.length > 0) {
    await db
      .update(refreshTokens)
      .set({ revokedAt: now, revokedReason: reason })
      .where(
        and(
          inArray(
            refreshTokens.sessionId,
            ended.map((s) => s.id),
          ),
          isNull(refreshTokens.revokedAt),
        ),
      );
  }
  return ended.map((s) => s.id);
}

/**
 * True when the user has signed in before, but never from this IP address: no session and no successful sign-in
 * of theirs used it. A first sign-in (or no known address) is never "unseen".
 */
export async function isUnseenIp(db: DbOrTx, userId: string, ip: string | null): Promise<boolean> {
  if (!ip) return false;
  const [any] = await db.select({ id: sessions.id }).from(sessions).where(eq(sessions.userId, userId)).limit(1);
  if (!any) return false;
  const [bySession] = await db
    .select({ id: sessions.id })
    .from(sessions)
    .where(and(eq(sessions.userId, userId), eq(sessions.ipAddress, ip)))
    .limit(1);
  if (bySession) return false;
  const [byEvent] = await db
    .select({ id: securityEvents.id })
    .from(securityEvents)
    .where(and(eq(securityEvents.userId, userId), eq(securityEvents.kind, 'LOGIN_SUCCESS'), eq(securityEvents.ipAddress, ip)))
    .limit(1);
  return !byEvent;
}
