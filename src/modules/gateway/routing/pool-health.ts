import { and, eq, sql } from 'drizzle-orm';
import type { FastifyBaseLogger } from 'fastify';
import { providerAccounts } from '../../../db/schema/gateway.js';
import type { Clock } from '../../../platform/clock/clock.js';
import type { Db } from '../../../platform/db/database.js';
import type { PoolCredentials } from './pool-credentials.js';
import { UpstreamError } from '../providers/types.js';
import type { ProviderEntry } from './registry.js';

type AccountRow = typeof providerAccounts.$inferSelect;

export type ProviderStatusValue = 'ACTIVE' | 'DEGRADED' | 'INACTIVE' | 'DISABLED';

/** What the pool needs from the catalog: to read and publish a provider's health. */
export interface ProviderStatusSink {
  setProviderStatus(providerSlug: string, status: ProviderStatusValue): Promise<unknown>;
  snapshot(): Promise<{ providersBySlug: Map<string, { status: string }> }>;
}

/** Startup credential checks give up after this long per account. */
const CHECK_TIMEOUT_MS = 10_000;

/**
 * The health of upstream accounts and providers: an account's failures and recoveries are written to its row (and
 * the cached rows dropped), and the provider's status published to the catalog.
 */
export function createPoolHealth(deps: {
  db: Db;
  clock: Clock;
  logger: FastifyBaseLogger;
  catalog: ProviderStatusSink;
  /** Drops the cached account rows of a provider. */
  forget: (providerSlug: string) => void;
}) {
  const { db, clock, logger, catalog } = deps;

  async function publish(providerSlug: string, status: ProviderStatusValue): Promise<void> {
    try {
      const current = (await catalog.snapshot()).providersBySlug.get(providerSlug)?.status;
      // Not a catalog provider, already so, or switched off by an administrator: nothing to publish.
      if (current === undefined || current === status || current === 'DISABLED') return;
      await catalog.setProviderStatus(providerSlug, status);
    } catch (err) {
      logger.warn({ err, providerSlug, status }, 'could not update the provider status');
    }
  }

  async function markFailure(providerSlug: string, accountId: string, error: UpstreamError): Promise<void> {
    const now = clock.now();
    await db
      .update(providerAccounts)
      .set({
        status: 'FAILING',
        consecutiveFailures: sql`${providerAccounts.consecutiveFailures} + 1`,
        lastErrorCode: error.code ?? error.kind,
        lastErrorMessage: error.message.slice(0, 500),
        lastFailureAt: now,
        updatedAt: now,
      })
      .where(eq(providerAccounts.id, accountId));
    deps.forget(providerSlug);
    logger.warn({ providerSlug, accountId, kind: error.kind, status: error.status, code: error.code }, 'upstream account failed');
    await publish(providerSlug, 'DEGRADED');
  }

  async function markSuccess(providerSlug: string, row: AccountRow): Promise<void> {
    if (row.status !== 'ACTIVE' || row.consecutiveFailures > 0) {
      const now = clock.now();
      await db
        .update(providerAccounts)
        .set({ status: 'ACTIVE', consecutiveFailures: 0, lastSuccessAt: now, updatedAt: now })
        .where(eq(providerAccounts.id, row.id));
      deps.forget(providerSlug);
    }
    await publish(providerSlug, 'ACTIVE');
  }

  /**
   * At start, one provider: proves each credential with a cheap call. A working credential makes the provider ACTIVE;
   * keys all rejected INACTIVE; one that could not be reached DEGRADED. No account: INACTIVE (except the local one).
   */
  async function checkProvider(entry: ProviderEntry, rows: AccountRow[], credentials: Pick<PoolCredentials, 'of'>): Promise<void> {
    const own = rows.filter((row) => row.providerSlug === entry.slug && credentials.of(row) !== null);
    if (own.length === 0) {
      if (entry.adapter.kind !== 'local') await publish(entry.slug, 'INACTIVE');
      return;
    }
    const results = await Promise.all(
      own.map(async (row) => {
        try {
          const credential = credentials.of(row)!;
          await withTimeout(entry.adapter.checkCredential({ ...credential, timeoutMs: Math.max(credential.timeoutMs, CHECK_TIMEOUT_MS) }), CHECK_TIMEOUT_MS);
          await markSuccess(entry.slug, { ...row, status: 'FAILING' });
          return 'ok' as const;
        } catch (err) {
          const error = err instanceof UpstreamError ? err : new UpstreamError('timeout', err instanceof Error ? err.message : String(err));
          const now = clock.now();
          await db
            .update(providerAccounts)
            .set({
              status: 'FAILING',
              lastErrorCode: error.code ?? error.kind,
              lastErrorMessage: error.message.slice(0, 500),
              lastFailureAt: now,
              updatedAt: now,
            })
            .where(and(eq(providerAccounts.id, row.id)));
          logger.warn({ provider: entry.slug, account: row.label, kind: error.kind, status: error.status }, 'upstream credential check failed');
          return error.kind;
        }
      }),
    );
    if (results.includes('ok')) await publish(entry.slug, 'ACTIVE');
    else if (results.every((kind) => kind === 'auth')) await publish(entry.slug, 'INACTIVE');
    else await publish(entry.slug, 'DEGRADED');
  }

  return { markFailure, markSuccess, checkProvider };
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new UpstreamError('timeout', `No answer within ${ms / 1000} s.`)), ms);
    }),
  ]);
}
