import { createHash } from 'node:crypto';
import { and, asc, eq } from 'drizzle-orm';
import { newId } from '../../../platform/ids.js';
import { providerAccounts } from '../../../db/schema/gateway.js';
import type { Clock } from '../../../platform/clock/clock.js';
import type { SecretBox } from '../../../platform/crypto/sealed.js';
import type { Db, DbOrTx } from '../../../platform/db/database.js';
import { isUniqueViolation } from '../../../platform/db/errors.js';
import { badRequest, conflict, notFound } from '../../../platform/http/errors.js';
import type { OutboundPolicy } from '../../../platform/net/outbound-policy.js';
import type { AuditWriter } from '../../audit/service.js';
import type { CatalogService } from '../../catalog/service.js';
import { checkBaseUrl } from './account-base-url.js';
import { accountView, keyHintOf, type AccountView } from './account-view.js';
import type { UpstreamPool } from './pool.js';
import { overBudget, periodOf, spendCentsOf } from './pool-spend.js';

type AccountRow = typeof providerAccounts.$inferSelect;

export interface NewUpstreamAccount {
  label: string;
  apiKey: string;
  baseUrl?: string | null;
  monthlyBudgetCents?: number | null;
  enabled?: boolean;
}

export type UpstreamAccountPatch = Partial<NewUpstreamAccount>;

/** Health of one provider's accounts, for the operators' provider list. */
export interface ProviderHealth {
  accounts: number;
  enabled: number;
  failing: number;
  overBudget: number;
  /** Consecutive failures summed over the accounts. */
  failures: number;
  /** Provider cost spent this month, in minor units (rounded up). */
  spendCents: number;
  /** Summed monthly budgets of the enabled accounts; null when one of them has no cap. */
  budgetCents: number | null;
  lastError: { code: string | null; message: string | null; at: string } | null;
}

const fingerprintOf = (apiKey: string) => createHash('sha256').update(apiKey).digest('hex');

/**
 * Upstream accounts as operators manage them: the ones from the environment (enable/disable only: the rest lives in
 * `<PROVIDER>_API_KEY`) and the ones operators add, whose key is stored sealed (AES-256-GCM) and never returned;
 * answers carry the last 4 characters only. Every change is audited in its own transaction, and every instance's pool
 * drops its cached accounts through the table's NOTIFY trigger.
 */
export function createUpstreamAccounts(deps: {
  db: Db;
  clock: Clock;
  pool: UpstreamPool;
  secrets: SecretBox;
  catalog: Pick<CatalogService, 'snapshot' | 'setProviderStatus'>;
  outbound: Pick<OutboundPolicy, 'check'>;
}) {
  const { db, clock, pool, secrets, catalog, outbound } = deps;

  const view = (row: AccountRow) => accountView(row, clock.now(), pool.usable(row));

  async function providerOf(providerSlug: string) {
    const provider = (await catalog.snapshot()).providersBySlug.get(providerSlug);
    if (!provider) throw notFound(`No provider "${providerSlug}". See GET /v1/admin/providers.`);
    return provider;
  }

  async function rowOf(dbOrTx: DbOrTx, providerSlug: string, accountId: string): Promise<AccountRow> {
    const [row] = await dbOrTx
      .select()
      .from(providerAccounts)
      .where(and(eq(providerAccounts.id, accountId), eq(providerAccounts.providerSlug, providerSlug)));
    if (!row) throw notFound(`No upstream account ${accountId} under the provider "${providerSlug}".`);
    return row;
  }

  /** A provider nobody could serve becomes servable once it has an enabled account (its first call proves the key). */
  async function wakeProvider(providerSlug: string, enabled: boolean): Promise<void> {
    pool.refresh(providerSlug);
    if (!enabled) return;
    const provider = (await catalog.snapshot()).providersBySlug.get(providerSlug);
    if (provider?.status === 'INACTIVE') await catalog.setProviderStatus(providerSlug, 'ACTIVE');
  }

  /** A key of parts (Kling's `<access key>:<secret key>`) is refused here in the shape its adapter refuses at start. */
  function checkKeyShape(providerSlug: string, apiKey: string | undefined): void {
    if (apiKey === undefined) return;
    try {
      pool.adapterOf(providerSlug)?.checkKeyShape?.(apiKey);
    } catch (err) {
      throw badRequest(`This key cannot be used with "${providerSlug}": ${err instanceof Error ? err.message : String(err)}`, { field: 'apiKey' });
    }
  }

  const duplicate = (providerSlug: string) => conflict(`The provider "${providerSlug}" already has an account with this API key.`);

  return {
    /** Every account of a provider, environment ones first, then by creation. */
    async list(providerSlug: string): Promise<AccountView[]> {
      await providerOf(providerSlug);
      await pool.flushSpend();
      const rows = await db
        .select()
        .from(providerAccounts)
        .where(eq(providerAccounts.providerSlug, providerSlug))
        .orderBy(asc(providerAccounts.source), asc(providerAccounts.id));
      return rows.map(view);
    },

    async get(providerSlug: string, accountId: string): Promise<AccountView> {
      await providerOf(providerSlug);
      return view(await rowOf(db, providerSlug, accountId));
    },

    /** Health per provider slug, over every account. */
    async health(): Promise<Map<string, ProviderHealth>> {
      await pool.flushSpend();
      const now = clock.now();
      const result = new Map<string, ProviderHealth>();
      for (const row of await db.select().from(providerAccounts)) {
        const h = result.get(row.providerSlug) ?? {
          accounts: 0,
          enabled: 0,
          failing: 0,
          overBudget: 0,
          failures: 0,
          spendCents: 0,
          budgetCents: 0,
          lastError: null,
        };
        h.accounts++;
        h.spendCents += spendCentsOf(row, now);
        h.failures += row.consecutiveFailures;
        if (row.enabled) {
          h.enabled++;
          h.budgetCents = h.budgetCents === null || row.monthlyBudgetCents === null ? null : h.budgetCents + row.monthlyBudgetCents;
          if (row.status === 'FAILING') h.failing++;
          if (overBudget(row, now)) h.overBudget++;
        }
        if (row.lastFailureAt && (!h.lastError || h.lastError.at < row.lastFailureAt.toISOString())) {
          h.lastError = { code: row.lastErrorCode, message: row.lastErrorMessage, at: row.lastFailureAt.toISOString() };
        }
        result.set(row.providerSlug, h);
      }
      for (const h of result.values()) if (h.enabled === 0) h.budgetCents = null;
      return result;
    },

    /** Adds an operator account; its key is sealed to the row's id before it is stored. */
    async add(providerSlug: string, input: NewUpstreamAccount, audit: AuditWriter): Promise<AccountView> {
      await providerOf(providerSlug);
      if (!pool.serves(providerSlug)) {
        throw badRequest(`The provider "${providerSlug}" has no upstream adapter in this service, so accounts cannot be added to it.`, {
          field: 'providerSlug',
        });
      }
      checkKeyShape(providerSlug, input.apiKey);
      await checkBaseUrl(outbound, input.baseUrl);
      const id = newId();
      const now = clock.now();
      const enabled = input.enabled ?? true;
      const created = await db
        .transaction(async (tx) => {
          const [row] = await tx
            .insert(providerAccounts)
            .values({
              id,
              providerSlug,
              source: 'OPERATOR',
              keyFingerprint: fingerprintOf(input.apiKey),
              keyHint: keyHintOf(input.apiKey),
              encryptedApiKey: secrets.seal(input.apiKey, id),
              label: input.label,
              baseUrl: input.baseUrl ?? null,
              monthlyBudgetCents: input.monthlyBudgetCents ?? null,
              enabled,
              spendPeriod: periodOf(now),
              createdAt: now,
              updatedAt: now,
            })
            .returning();
          const after = view(row!);
          await audit({ action: 'provider.account.create', targetType: 'provider_account', targetId: id, before: null, after }, tx);
          return after;
        })
        .catch((err: unknown) => {
          throw isUniqueViolation(err) ? duplicate(providerSlug) : err;
        });
      await wakeProvider(providerSlug, enabled);
      return created;
    },

    /**
     * Changes an account; an environment account can only be switched on or off (the rest comes from its variables).
     * A new base URL needs the key again in the same request: the stored key never follows an address change.
     */
    async update(providerSlug: string, accountId: string, patch: UpstreamAccountPatch, audit: AuditWriter): Promise<AccountView> {
      await providerOf(providerSlug);
      // An account's source never changes, so what may be changed is decided before the transaction.
      const current = await rowOf(db, providerSlug, accountId);
      if (current.source === 'ENV') {
        const fixed = (['label', 'apiKey', 'baseUrl', 'monthlyBudgetCents'] as const).filter((field) => patch[field] !== undefined);
        if (fixed.length > 0) {
          throw badRequest(
            `This account comes from the environment: change ${fixed.join(', ')} in its <PROVIDER>_* variables; only "enabled" can be changed here.`,
            {
              fields: fixed,
            },
          );
        }
      }
      if (patch.baseUrl !== undefined && patch.apiKey === undefined) {
        throw badRequest(
          "Changing baseUrl sends the account's key to a new address, so the key must be entered again: send apiKey with baseUrl in the same request.",
          { field: 'apiKey', requiredWith: 'baseUrl' },
        );
      }
      checkKeyShape(providerSlug, patch.apiKey);
      await checkBaseUrl(outbound, patch.baseUrl);
      const result = await db
        .transaction(async (tx) => {
          const row = await rowOf(tx, providerSlug, accountId);
          const now = clock.now();
          const [updated] = await tx
            .update(providerAccounts)
            .set({
              ...(patch.label !== undefined ? { label: patch.label } : {}),
              ...(patch.baseUrl !== undefined ? { baseUrl: patch.baseUrl } : {}),
              ...(patch.monthlyBudgetCents !== undefined ? { monthlyBudgetCents: patch.monthlyBudgetCents } : {}),
              ...(patch.enabled !== undefined ? { enabled: patch.enabled } : {}),
              ...(patch.apiKey !== undefined
                ? {
                    encryptedApiKey: secrets.seal(patch.apiKey, row.id),
                    keyHint: keyHintOf(patch.apiKey),
                    keyFingerprint: fingerprintOf(patch.apiKey),
                    status: 'ACTIVE' as const,
                    consecutiveFailures: 0,
                  }
                : {}),
              updatedAt: now,
            })
            .where(eq(providerAccounts.id, row.id))
            .returning();
          const before = view(row);
          const after = view(updated!);
          await audit(
            {
              action:
                patch.enabled === false && Object.keys(patch).length === 1
                  ? 'provider.account.disable'
                  : patch.enabled === true && Object.keys(patch).length === 1
                    ? 'provider.account.enable'
                    : 'provider.account.update',
              targetType: 'provider_account',
              targetId: row.id,
              before,
              after,
            },
            tx,
          );
          return after;
        })
        .catch((err: unknown) => {
          throw isUniqueViolation(err) ? duplicate(providerSlug) : err;
        });
      await wakeProvider(providerSlug, result.enabled);
      return result;
    },

    /** Deletes an operator account (an environment account is disabled instead: it would come back at the next start). */
    async remove(providerSlug: string, accountId: string, audit: AuditWriter): Promise<void> {
      await providerOf(providerSlug);
      await db.transaction(async (tx) => {
        const row = await rowOf(tx, providerSlug, accountId);
        if (row.source === 'ENV') {
          throw conflict(
            'This account comes from the environment and would come back at the next start: disable it here, or remove its key from the <PROVIDER>_API_KEY variable.',
          );
        }
        await tx.delete(providerAccounts).where(eq(providerAccounts.id, row.id));
        await audit({ action: 'provider.account.delete', targetType: 'provider_account', targetId: row.id, before: view(row), after: null }, tx);
      });
      pool.refresh(providerSlug);
    },
  };
}

export type UpstreamAccounts = ReturnType<typeof createUpstreamAccounts>;
