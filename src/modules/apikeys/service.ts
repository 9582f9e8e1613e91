import { hash, randomBytes } from 'node:crypto';
import { and, desc, eq, isNull, or, sql } from 'drizzle-orm';
import { apiKeys, apiKeySpend } from '../../db/schema/apikeys.js';
import type { ApiKeyVerifier, KeyControls, Principal } from '../../platform/auth/plugin.js';
import type { Clock } from '../../platform/clock/clock.js';
import { bound, runBound } from '../../platform/db/bound.js';
import type { Db, DbOrTx } from '../../platform/db/database.js';
import { writeBehind } from '../../platform/db/write-behind.js';
import type { EventBus } from '../../platform/events/event-bus.js';
import { createInvalidatingCache } from '../../platform/events/invalidating-cache.js';
import { AppError, badRequest, forbidden, notFound, unauthorized } from '../../platform/http/errors.js';
import type { AuthData } from '../auth/index.js';
import { budgetSettlementParts, growBudgetHold, holdBudget, periodEndOf, periodStartOf, settleBudget, type BudgetHold } from './budget.js';
import { API_KEY_SCOPES, type ApiKeyScope, type KeyControlsInput } from './schemas.js';

/** Every key starts with this, so a Bearer credential is recognised as an API key without a lookup. */
export const API_KEY_PREFIX = 'sk_sf_';
/** Active (unrevoked) keys one user may hold. */
export const MAX_ACTIVE_KEYS = 25;
/** `lastUsedAt` is written at most this often (for every key used since, in one statement), not on every request. */
export const LAST_USED_RESOLUTION_MS = 1_000;
/** A batch of key uses (`[{ id, at }]` as JSON): each key's stamp moves forward only, whatever the order of writers. */
const STAMP_USES = `
  update api_keys k set last_used_at = u.at
  from jsonb_to_recordset($1::text::jsonb) as u(id uuid, at timestamptz)
  where k.id = u.id and (k.last_used_at is null or k.last_used_at < u.at)`;

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
  /** Whether a model slug exists (the catalog), to validate `allowedModels`. */
  modelExists?: (slug: string) => Promise<boolean>;
}

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

type ApiKeyRow = typeof apiKeys.$inferSelect;

// The one-shot hash (Node 20.12+): a third of createHash's cost, paid on every request made with a key.
const hashKey = (raw: string) => hash('sha256', raw, 'hex');

/** The key's controls as the gateway reads them; null when it has none (the common case costs nothing). */
export function controlsOf(row: Pick<ApiKeyRow, 'budgetTokens' | 'budgetPeriod' | 'rateLimitPerMinute' | 'allowedModels'>): KeyControls | null {
  const budget = row.budgetTokens !== null && row.budgetPeriod !== null ? { tokens: row.budgetTokens, period: row.budgetPeriod } : null;
  if (!budget && row.rateLimitPerMinute === null && row.allowedModels === null) return null;
  return { budget, requestsPerMinute: row.rateLimitPerMinute, allowedModels: row.allowedModels };
}

type Spend = { spent: number; reserved: number };

const budgetView = (row: ApiKeyRow, spend: Spend | undefined, now: Date) => {
  if (row.budgetTokens === null || row.budgetPeriod === null) return null;
  return {
    tokens: row.budgetTokens,
    period: row.budgetPeriod,
    spentTokens: spend?.spent ?? 0,
    reservedTokens: spend?.reserved ?? 0,
    periodStart: periodStartOf(row.budgetPeriod, now).toISOString(),
    resetsAt: periodEndOf(row.budgetPeriod, now)?.toISOString() ?? null,
  };
};

const toListed = (row: ApiKeyRow, spend?: Spend, now = new Date()) => ({
  id: row.id,
  label: row.label,
  keyPrefix: row.keyPrefix,
  scopes: row.scopes.join(','),
  lastUsedAt: row.lastUsedAt?.toISOString() ?? null,
  expiresAt: row.expiresAt?.toISOString() ?? null,
  createdAt: row.createdAt.toISOString(),
  budget: budgetView(row, spend, now),
  rateLimit: row.rateLimitPerMinute === null ? null : { requestsPerMinute: row.rateLimitPerMinute },
  allowedModels: row.allowedModels,
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
      return { id: key.id, userId: key.userId, role: owner.role, scopes: key.scopes, revokedAt: key.revokedAt, expiresAt: key.expiresAt, controls: controlsOf(key) };
    },
  });

  async function requireApiAccess(userId: string): Promise<void> {
    const access = await plans.apiAccessOf(userId);
    if (access === null) {
      throw new AppError(403, 'NO_ACTIVE_SUBSCRIPTION', 'API keys need an active plan with API access. Choose a plan under /v1/plans first.');
    }
    if (!access) {
      throw forbidden('Your plan does not include API access. Upgrade to a plan with API access to manage API keys.', { feature: 'apiAccess' });
    }
  }

  /** The current period's spend of the budgeted keys among `rows`, in one query (none when no key has a budget). */
  async function spendOf(rows: ApiKeyRow[], now: Date): Promise<Map<string, Spend>> {
    const budgeted = rows.filter((row) => row.budgetPeriod !== null);
    const spends = new Map<string, Spend>();
    if (budgeted.length === 0) return spends;
    const found = await db
      .select()
      .from(apiKeySpend)
      .where(or(...budgeted.map((row) => and(eq(apiKeySpend.apiKeyId, row.id), eq(apiKeySpend.periodStart, periodStartOf(row.budgetPeriod!, now))))));
    for (const spend of found) spends.set(spend.apiKeyId, { spent: spend.spent, reserved: spend.reserved });
    return spends;
  }

  /** The columns of the controls given (an omitted one is left as it is); unknown model slugs are a 400. */
  async function controlColumns(input: KeyControlsInput) {
    const columns: Partial<Pick<ApiKeyRow, 'budgetTokens' | 'budgetPeriod' | 'rateLimitPerMinute' | 'allowedModels'>> = {};
    if (input.budget !== undefined) {
      columns.budgetTokens = input.budget?.tokens ?? null;
      columns.budgetPeriod = input.budget?.period ?? null;
    }
    if (input.rateLimit !== undefined) columns.rateLimitPerMinute = input.rateLimit?.requestsPerMinute ?? null;
    if (input.allowedModels !== undefined) {
      const slugs = input.allowedModels === null ? null : [...new Set(input.allowedModels.map((slug) => slug.trim()))];
      if (slugs && deps.modelExists) {
        const unknown: { index: number; slug: string }[] = [];
        for (const [index, slug] of slugs.entries()) if (!(await deps.modelExists(slug))) unknown.push({ index, slug });
        if (unknown.length > 0) {
          throw badRequest(
            `allowedModels names models that do not exist: ${unknown.map((u) => JSON.stringify(u.slug)).join(', ')}. Read model slugs from GET /v1/models.`,
            unknown.map((u) => ({ field: `allowedModels.${u.index}`, message: `no model with slug "${u.slug}"` })),
          );
        }
      }
      columns.allowedModels = slugs;
    }
    return columns;
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

  return {
    verifier,

    /** Writes the key uses still pending (at shutdown). */
    stop: () => stamps.flush(),

    async list(userId: string) {
      await requireApiAccess(userId);
      await stamps.flush();
      const rows = await db
        .select()
        .from(apiKeys)
        .where(and(eq(apiKeys.userId, userId), isNull(apiKeys.revokedAt)))
        .orderBy(desc(apiKeys.createdAt), desc(apiKeys.id));
      const now = clock.now();
      const spends = await spendOf(rows, now);
      return { items: rows.map((row) => toListed(row, spends.get(row.id), now)) };
    },

    /** One of the user's keys as listed (404 when it is not theirs or was revoked), for a key describing itself. */
    async describe(userId: string, id: string) {
      await stamps.flush();
      const [row] = await db
        .select()
        .from(apiKeys)
        .where(and(eq(apiKeys.id, id), eq(apiKeys.userId, userId), isNull(apiKeys.revokedAt)));
      if (!row) throw notFound('No such API key.');
      return Object.assign(toListed(row), { scopes: row.scopes });
    },

    async create(userId: string, input: { label: string; scopes: ApiKeyScope[]; expiresAt?: string | null } & KeyControlsInput) {
      await requireApiAccess(userId);
      const controls = await controlColumns(input);
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
          .values({ userId, label, keyHash: hashKey(raw), keyPrefix: raw.slice(-4), scopes, expiresAt, createdAt: now, ...controls })
          .returning();
        return inserted!;
      });
      const { lastUsedAt: _unused, ...listed } = toListed(row, undefined, now);
      return Object.assign(listed, { key: raw });
    },

    /** `PATCH /v1/account/api-keys/:id`: a new label or controls; a control set to null is removed. */
    async update(userId: string, id: string, input: { label?: string } & KeyControlsInput) {
      await requireApiAccess(userId);
      const controls = await controlColumns(input);
      const changes = Object.assign(input.label !== undefined ? { label: input.label.trim() } : {}, controls);
      const [row] = await db
        .update(apiKeys)
        .set(changes)
        .where(and(eq(apiKeys.id, id), eq(apiKeys.userId, userId), isNull(apiKeys.revokedAt)))
        .returning();
      if (!row) throw notFound('No API key with this id.');
      // The new controls apply at once here; the row's trigger tells the other instances.
      await verified.changed(row.keyHash);
      const now = clock.now();
      return toListed(row, (await spendOf([row], now)).get(row.id), now);
    },

    /** The controls of a key by id (a job resumed without its request's principal); null when it has none. */
    async controlsById(apiKeyId: string): Promise<KeyControls | null> {
      const [row] = await db.select().from(apiKeys).where(eq(apiKeys.id, apiKeyId));
      return row ? controlsOf(row) : null;
    },

    /** Holds a call's tokens on the key's budget (429 KEY_BUDGET_EXCEEDED), inside the reservation's transaction. */
    holdBudget: (tx: DbOrTx, hold: BudgetHold) => holdBudget(tx, hold, clock.now()),
    /** Raises a call's hold (a dearer fallback model), within the budget, inside the caller's transaction. */
    growBudgetHold: (tx: DbOrTx, hold: BudgetHold) => growBudgetHold(tx, hold, clock.now()),
    /** The hold closed at the real cost, as parts of the settling statement. */
    budgetSettlementParts,
    /** The hold closed at the real cost (0: refunded) inside the settling transaction; once per request id. */
    settleBudget: (tx: DbOrTx, requestId: string, chargedTokens: number) => settleBudget(tx, requestId, chargedTokens),

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
