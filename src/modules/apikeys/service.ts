import { createHash, randomBytes } from 'node:crypto';
import { and, desc, eq, isNull, lt, or, sql } from 'drizzle-orm';
import { apiKeys } from '../../db/schema/apikeys.js';
import type { ApiKeyVerifier, Principal } from '../../platform/auth/plugin.js';
import type { Clock } from '../../platform/clock/clock.js';
import type { Db, DbOrTx } from '../../platform/db/database.js';
import type { EventBus } from '../../platform/events/event-bus.js';
import { createInvalidatingCache } from '../../platform/events/invalidating-cache.js';
import { AppError, badRequest, forbidden, notFound, unauthorized } from '../../platform/http/errors.js';
import type { AuthData } from '../auth/index.js';
import { API_KEY_SCOPES, type ApiKeyScope } from './schemas.js';

/** Every key starts with this, so a Bearer credential is recognised as an API key without a lookup. */
export const API_KEY_PREFIX = 'sk_sf_';
/** Active (unrevoked) keys one user may hold. */
export const MAX_ACTIVE_KEYS = 25;
/** `lastUsedAt` is rewritten once it is this old, not on every request of a busy key. */
export const LAST_USED_RESOLUTION_MS = 1_000;

/** What key management needs to know about the caller's plan. */
export interface PlanAccess {
  /** null when the user has no active subscription. */
  apiAccessOf(userId: string): Promise<boolean | null>;
}

export interface ApiKeysDeps {
  db: Db;
  clock: Clock;
  plans: PlanAccess;
  /** The key owner's role and status (the auth module's users). */
  users: Pick<AuthData['users'], 'findActiveById'>;
  /** Cross-instance invalidation of verified keys (a trigger announces every change of a key row). */
  events?: EventBus;
  onBackgroundError?: (err: unknown) => void;
}

/** What verifying a key needs, cached per key hash; null for a hash no key has (or whose owner is gone). */
interface VerifiedKey {
  id: string;
  userId: string;
  role: Principal['role'];
  scopes: string[];
  revokedAt: Date | null;
  expiresAt: Date | null;
}

type ApiKeyRow = typeof apiKeys.$inferSelect;

const hashKey = (raw: string) => createHash('sha256').update(raw).digest('hex');

const toListed = (row: ApiKeyRow) => ({
  id: row.id,
  label: row.label,
  keyPrefix: row.keyPrefix,
  scopes: row.scopes.join(','),
  lastUsedAt: row.lastUsedAt?.toISOString() ?? null,
  expiresAt: row.expiresAt?.toISOString() ?? null,
  createdAt: row.createdAt.toISOString(),
});

/** API keys: created with the raw secret shown once, stored as SHA-256, verified on /v1/ai/* routes. */
export function createApiKeysService(deps: ApiKeysDeps) {
  const { db, clock, plans, users } = deps;
  const onBackgroundError = deps.onBackgroundError ?? (() => undefined);
  const verified = createInvalidatingCache<VerifiedKey | null>({
    name: 'api_keys',
    bus: deps.events,
    load: async (keyHash) => {
      const [key] = await db.select().from(apiKeys).where(eq(apiKeys.keyHash, keyHash));
      const owner = key ? await users.findActiveById(key.userId) : undefined;
      if (!key || !owner) return null;
      return { id: key.id, userId: key.userId, role: owner.role, scopes: key.scopes, revokedAt: key.revokedAt, expiresAt: key.expiresAt };
    },
  });
  const lastStamped = new Map<string, number>();

  async function requireApiAccess(userId: string): Promise<void> {
    const access = await plans.apiAccessOf(userId);
    if (access === null) {
      throw new AppError(403, 'NO_ACTIVE_SUBSCRIPTION', 'API keys need an active plan with API access. Choose a plan under /v1/plans first.');
    }
    if (!access) {
      throw forbidden('Your plan does not include API access. Upgrade to a plan with API access to manage API keys.', { feature: 'apiAccess' });
    }
  }

  const verifier: ApiKeyVerifier = {
    looksLikeApiKey: (token) => token.startsWith(API_KEY_PREFIX),

    async verify(rawKey: string): Promise<Principal> {
      const now = clock.now();
      const key = await verified.get(hashKey(rawKey));
      if (!key) throw unauthorized('The API key is not valid. Check that it was copied in full.');
      if (key.revokedAt) throw unauthorized('This API key was revoked. Create a new key under /v1/account/api-keys.');
      if (key.expiresAt && key.expiresAt <= now) {
        throw unauthorized(`This API key expired at ${key.expiresAt.toISOString()}. Create a new key under /v1/account/api-keys.`);
      }
      stampUse(key.id, now);
      return { userId: key.userId, role: key.role, sessionId: null, via: 'api_key', scopes: key.scopes, apiKeyId: key.id };
    },
  };

  /**
   * Records the use off the request's path. A key under heavy use would otherwise write (and lock) its row on every
   * request, so the stamp is written when this process has not written one for LAST_USED_RESOLUTION_MS (and the
   * row's is older than that): `lastUsedAt` is exact to that resolution.
   */
  function stampUse(id: string, now: Date): void {
    const previous = lastStamped.get(id);
    if (previous !== undefined && now.getTime() - previous < LAST_USED_RESOLUTION_MS) return;
    if (lastStamped.size > 50_000) lastStamped.clear();
    lastStamped.set(id, now.getTime());
    const threshold = new Date(now.getTime() - LAST_USED_RESOLUTION_MS);
    db.update(apiKeys)
      .set({ lastUsedAt: now })
      .where(and(eq(apiKeys.id, id), or(isNull(apiKeys.lastUsedAt), lt(apiKeys.lastUsedAt, threshold))))
      .then(() => undefined, onBackgroundError);
  }

  return {
    verifier,

    async list(userId: string) {
      await requireApiAccess(userId);
      const rows = await db
        .select()
        .from(apiKeys)
        .where(and(eq(apiKeys.userId, userId), isNull(apiKeys.revokedAt)))
        .orderBy(desc(apiKeys.createdAt), desc(apiKeys.id));
      return { items: rows.map(toListed) };
    },

    /** One of the user's keys as listed (404 when it is not theirs or was revoked), for a key describing itself. */
    async describe(userId: string, id: string) {
      const [row] = await db
        .select()
        .from(apiKeys)
        .where(and(eq(apiKeys.id, id), eq(apiKeys.userId, userId), isNull(apiKeys.revokedAt)));
      if (!row) throw notFound('No such API key.');
      return { ...toListed(row), scopes: row.scopes };
    },

    async create(userId: string, input: { label: string; scopes: ApiKeyScope[]; expiresAt?: string | null }) {
      await requireApiAccess(userId);
      const now = clock.now();
      const label = input.label.trim();
      const scopes = API_KEY_SCOPES.filter((scope) => input.scopes.includes(scope));
      const expiresAt = input.expiresAt ? new Date(input.expiresAt) : null;
      if (expiresAt && expiresAt <= now) {
        throw badRequest('expiresAt must be in the future. Omit it for a key that does not expire.', [{ field: 'expiresAt', message: 'must be in the future' }]);
      }
      const raw = `${API_KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
      const row = await db.transaction(async (tx) => {
        // Serialise this user's creations so the cap holds under concurrent requests.
        await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`api_keys:${userId}`}))`);
        const active = await tx.$count(apiKeys, and(eq(apiKeys.userId, userId), isNull(apiKeys.revokedAt)));
        if (active >= MAX_ACTIVE_KEYS) {
          throw badRequest(`You already have ${MAX_ACTIVE_KEYS} active API keys. Revoke one you no longer use before creating another.`, {
            limit: MAX_ACTIVE_KEYS,
          });
        }
        const [inserted] = await tx
          .insert(apiKeys)
          .values({ userId, label, keyHash: hashKey(raw), keyPrefix: raw.slice(-4), scopes, expiresAt, createdAt: now })
          .returning();
        return inserted!;
      });
      const { lastUsedAt: _unused, ...listed } = toListed(row);
      return { ...listed, key: raw };
    },

    async revoke(userId: string, id: string): Promise<{ ok: true }> {
      await requireApiAccess(userId);
      const revoked = await db
        .update(apiKeys)
        .set({ revokedAt: clock.now() })
        .where(and(eq(apiKeys.id, id), eq(apiKeys.userId, userId), isNull(apiKeys.revokedAt)))
        .returning({ keyHash: apiKeys.keyHash });
      if (revoked.length === 0) throw notFound('No API key with this id.');
      // Refused here at once; the row's trigger tells the other instances.
      await verified.changed(revoked[0]!.keyHash);
      return { ok: true };
    },

    /** Revokes every key of a user (account deletion). */
    /**
     * The owner's account changed status (suspended or reinstated): their keys are verified afresh on every instance,
     * so a suspended owner's keys stop at once and work again when the suspension is lifted.
     */
    async ownerChanged(userId: string, tx: DbOrTx = db): Promise<void> {
      const keys = await tx.select({ keyHash: apiKeys.keyHash }).from(apiKeys).where(eq(apiKeys.userId, userId));
      for (const { keyHash } of keys) await verified.changed(keyHash, tx);
    },

    async revokeAllForUser(userId: string, tx: DbOrTx = db): Promise<number> {
      const revoked = await tx
        .update(apiKeys)
        .set({ revokedAt: clock.now() })
        .where(and(eq(apiKeys.userId, userId), isNull(apiKeys.revokedAt)))
        .returning({ keyHash: apiKeys.keyHash });
      for (const { keyHash } of revoked) await verified.changed(keyHash, tx);
      return revoked.length;
    },
  };
}

export type ApiKeysService = ReturnType<typeof createApiKeysService>;
