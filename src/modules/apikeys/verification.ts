import { hash } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { apiKeys } from '../../db/schema/apikeys.js';
import type { ApiKeyVerifier, KeyControls, Principal } from '../../platform/auth/plugin.js';
import type { Clock } from '../../platform/clock/clock.js';
import { bound, runBound } from '../../platform/db/bound.js';
import type { Db } from '../../platform/db/database.js';
import { writeBehind } from '../../platform/db/write-behind.js';
import type { EventBus } from '../../platform/events/event-bus.js';
import { createInvalidatingCache } from '../../platform/events/invalidating-cache.js';
import { unauthorized } from '../../platform/http/errors.js';
import type { AuthData } from '../auth/index.js';
import { controlsOf } from './key-controls.js';

/** Every key starts with this, so a Bearer credential is recognised as an API key without a lookup. */
export const API_KEY_PREFIX = 'sk_sf_';
/** `lastUsedAt` is written at most this often (for every key used since, in one statement), not on every request. */
export const LAST_USED_RESOLUTION_MS = 1_000;
/** A batch of key uses (`[{ id, at }]` as JSON): each key's stamp moves forward only, whatever the order of writers. */
const STAMP_USES = `
  update api_keys k set last_used_at = u.at
  from jsonb_to_recordset($1::text::jsonb) as u(id uuid, at timestamptz)
  where k.id = u.id and (k.last_used_at is null or k.last_used_at < u.at)`;

/** What verifying a key needs, cached per key hash; null for a hash no key has (or whose owner is gone). */
interface VerifiedKey {
  id: string;
  userId: string;
  role: Principal['role'];
  scopes: string[];
  revokedAt: Date | null;
  expiresAt: Date | null;
  controls: KeyControls | null;
}

// The one-shot hash (Node 20.12+): a third of createHash's cost, paid on every request made with a key.
export const hashKey = (raw: string) => hash('sha256', raw, 'hex');

export interface KeyVerificationDeps {
  db: Db;
  clock: Clock;
  /** The key owner's role and status (the auth module's users). */
  users: Pick<AuthData['users'], 'findActiveById'>;
  /** Cross-instance invalidation of verified keys (a trigger announces every change of a key row). */
  events?: EventBus;
  onBackgroundError: (err: unknown) => void;
}

/**
 * Verifies a key on every request made with one (cached per key hash, dropped on every instance when the key row
 * changes) and stamps its use off the request's path.
 */
export function createKeyVerification(deps: KeyVerificationDeps) {
  const { db, clock, users, onBackgroundError } = deps;
  const verified = createInvalidatingCache<VerifiedKey | null>({
    name: 'api_keys',
    bus: deps.events,
    load: async (keyHash) => {
      const [key] = await db.select().from(apiKeys).where(eq(apiKeys.keyHash, keyHash));
      const owner = key ? await users.findActiveById(key.userId) : undefined;
      if (!key || !owner) return null;
      return {
        id: key.id,
        userId: key.userId,
        role: owner.role,
        scopes: key.scopes,
        revokedAt: key.revokedAt,
        expiresAt: key.expiresAt,
        controls: controlsOf(key),
      };
    },
  });

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
      return { userId: key.userId, role: key.role, sessionId: null, via: 'api_key', scopes: key.scopes, apiKeyId: key.id, keyControls: key.controls };
    },
  };

  /**
   * Records the use off the request's path. A key under heavy use would otherwise write (and lock) its row on every
   * request, so uses are stamped in memory and written for every key at once, at most once per
   * LAST_USED_RESOLUTION_MS: `lastUsedAt` is exact to that resolution. Reads of it on this instance write what is
   * pending first. Not durable on its own commit: a stamp lost to a crash is a second of history.
   */
  const stamps = writeBehind<string>({
    delayMs: LAST_USED_RESOLUTION_MS,
    merge: (pending, at) => (at > pending ? at : pending),
    write: (batch) =>
      runBound(db, bound(STAMP_USES, [JSON.stringify(batch.map(([id, at]) => ({ id, at })))]), { asyncCommit: true }).then(() => undefined, onBackgroundError),
  });
  const stampUse = (id: string, now: Date): void => stamps.add(id, now.toISOString());

  return { verified, verifier, stamps };
}
