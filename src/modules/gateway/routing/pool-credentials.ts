import type { FastifyBaseLogger } from 'fastify';
import { providerAccounts } from '../../../db/schema/gateway.js';
import type { Clock } from '../../../platform/clock/clock.js';
import type { SecretBox } from '../../../platform/crypto/sealed.js';
import type { Db } from '../../../platform/db/database.js';
import { periodOf } from './pool-spend.js';
import type { UpstreamCredential } from '../providers/types.js';
import { DEFAULT_TIMEOUT_MS, type ProviderEntry } from './registry.js';

type AccountRow = typeof providerAccounts.$inferSelect;

/**
 * The credentials this instance can call with: the accounts configured in its environment (registered as rows at
 * start) and the OPERATOR accounts whose sealed keys it can open.
 */
export function createPoolCredentials(deps: { db: Db; clock: Clock; logger: FastifyBaseLogger; registry: Map<string, ProviderEntry>; secrets: SecretBox }) {
  const { db, clock, logger, registry, secrets } = deps;
  /** accountId -> the credential of an account configured in this instance, built once (secrets stay in memory). */
  const credentials = new Map<string, UpstreamCredential>();
  /** Opened keys of OPERATOR accounts, by account id, with the sealed value they came from (a new key re-opens). */
  const opened = new Map<string, { sealed: string; credential: UpstreamCredential | null }>();

  /** Upserts one row per configured account; returns nothing but fills the credential map. */
  async function syncAccounts(): Promise<void> {
    const now = clock.now();
    for (const entry of registry.values()) {
      for (const account of entry.accounts) {
        const [row] = await db
          .insert(providerAccounts)
          .values({
            providerSlug: account.providerSlug,
            keyFingerprint: account.fingerprint,
            keyHint: account.keyHint,
            label: account.label,
            baseUrl: account.baseUrl,
            monthlyBudgetCents: account.monthlyBudgetCents,
            spendPeriod: periodOf(now),
            createdAt: now,
            updatedAt: now,
          })
          .onConflictDoUpdate({
            target: [providerAccounts.providerSlug, providerAccounts.keyFingerprint],
            set: { label: account.label, baseUrl: account.baseUrl, monthlyBudgetCents: account.monthlyBudgetCents, keyHint: account.keyHint, updatedAt: now },
          })
          .returning({ id: providerAccounts.id });
        credentials.set(row!.id, {
          accountId: row!.id,
          providerSlug: account.providerSlug,
          apiKey: account.apiKey,
          baseUrl: account.baseUrl,
          timeoutMs: account.timeoutMs,
        });
      }
    }
  }

  /** An OPERATOR account's key, opened once per sealed value; null (logged) when it cannot be opened with this key. */
  function operatorCredential(row: AccountRow): UpstreamCredential | null {
    if (!row.encryptedApiKey || !registry.has(row.providerSlug)) return null;
    const hit = opened.get(row.id);
    if (hit?.sealed === row.encryptedApiKey) return hit.credential;
    let credential: UpstreamCredential | null = null;
    try {
      const apiKey = secrets.open(row.encryptedApiKey, row.id);
      const timeoutMs = registry.get(row.providerSlug)!.accounts[0]?.timeoutMs ?? DEFAULT_TIMEOUT_MS;
      credential = { accountId: row.id, providerSlug: row.providerSlug, apiKey, baseUrl: row.baseUrl, timeoutMs };
    } catch (err) {
      logger.error(
        { providerSlug: row.providerSlug, accountId: row.id, err: err instanceof Error ? err.message : String(err) },
        'an upstream account key cannot be decrypted; the account is skipped',
      );
    }
    opened.set(row.id, { sealed: row.encryptedApiKey, credential });
    return credential;
  }

  return {
    sync: syncAccounts,

    /** The credential of an enabled account this instance can call with, or null. */
    of(row: AccountRow): UpstreamCredential | null {
      if (!row.enabled) return null;
      if (row.source === 'OPERATOR') return operatorCredential(row);
      return credentials.get(row.id) ?? null;
    },

    /** The credential of one account configured in this instance or opened here, or null. */
    byId(accountId: string): UpstreamCredential | null {
      return credentials.get(accountId) ?? opened.get(accountId)?.credential ?? null;
    },

    /** Whether the account's key comes from this instance's environment. */
    configuredHere: (accountId: string) => credentials.has(accountId),
  };
}

export type PoolCredentials = ReturnType<typeof createPoolCredentials>;
