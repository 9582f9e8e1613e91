import { randomBytes } from 'node:crypto';
import { and, desc, eq, isNull, sql } from 'drizzle-orm';
import { apiKeys } from '../../db/schema/apikeys.js';
import type { KeyControls } from '../../platform/auth/plugin.js';
import type { Clock } from '../../platform/clock/clock.js';
import type { Db, DbOrTx } from '../../platform/db/database.js';
import type { EventBus } from '../../platform/events/event-bus.js';
import { AppError, badRequest, forbidden, notFound } from '../../platform/http/errors.js';
import type { AuthData } from '../auth/index.js';
import { budgetSettlementParts, growBudgetHold, holdBudget, settleBudget, spendLate, type BudgetHold } from './budget.js';
import { controlColumns, controlsOf } from './key-controls.js';
import { spendOf, toListed } from './key-listing.js';
import { API_KEY_SCOPES, type ApiKeyScope, type KeyControlsInput } from './schemas.js';
import { API_KEY_PREFIX, createKeyVerification, hashKey } from './verification.js';

/** Active (unrevoked) keys one user may hold. */
export const MAX_ACTIVE_KEYS = 25;

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

/** API keys: created with the raw secret shown once, stored as SHA-256, verified on /v1/ai/* routes. */
export function createApiKeysService(deps: ApiKeysDeps) {
  const { db, clock, plans, users } = deps;
  const onBackgroundError = deps.onBackgroundError ?? (() => undefined);
  const { verified, verifier, stamps } = createKeyVerification({ db, clock, users, events: deps.events, onBackgroundError });

  async function requireApiAccess(userId: string): Promise<void> {
    const access = await plans.apiAccessOf(userId);
    if (access === null) {
      throw new AppError(403, 'NO_ACTIVE_SUBSCRIPTION', 'API keys need an active plan with API access. Choose a plan under /v1/plans first.');
    }
    if (!access) {
      throw forbidden('Your plan does not include API access. Upgrade to a plan with API access to manage API keys.', { feature: 'apiAccess' });
    }
  }

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
      const spends = await spendOf(db, rows, now);
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
      const controls = await controlColumns(deps, input);
      const now = clock.now();
      const label = input.label.trim();
      const scopes = API_KEY_SCOPES.filter((scope) => input.scopes.includes(scope));
      const expiresAt = input.expiresAt ? new Date(input.expiresAt) : null;
      if (expiresAt && expiresAt <= now) {
        throw badRequest('expiresAt must be in the future. Omit it for a key that does not expire.', [
          { field: 'expiresAt', message: 'must be in the future' },
        ]);
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
      const controls = await controlColumns(deps, input);
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
      return toListed(row, (await spendOf(db, [row], now)).get(row.id), now);
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
    /** Tokens charged after the call's hold was closed (see budget.ts), counted as spent in the key's budget if it has one. */
    async spendLate(tx: DbOrTx, apiKeyId: string, tokens: number): Promise<void> {
      const [row] = await tx.select({ budgetTokens: apiKeys.budgetTokens, budgetPeriod: apiKeys.budgetPeriod }).from(apiKeys).where(eq(apiKeys.id, apiKeyId));
      if (row?.budgetTokens != null && row.budgetPeriod) await spendLate(tx, apiKeyId, row.budgetPeriod, tokens, clock.now());
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

    /**
     * The owner's account changed status (suspended or reinstated): their keys are verified afresh on every instance,
     * so a suspended owner's keys stop at once and work again when the suspension is lifted.
     */
    async ownerChanged(userId: string, tx: DbOrTx = db): Promise<void> {
      const keys = await tx.select({ keyHash: apiKeys.keyHash }).from(apiKeys).where(eq(apiKeys.userId, userId));
      for (const { keyHash } of keys) await verified.changed(keyHash, tx);
    },

    /** Revokes every key of a user (account deletion). */
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
