import { eq } from 'drizzle-orm';
import type { FastifyBaseLogger } from 'fastify';
import { providerAccounts } from '../../../db/schema/gateway.js';
import type { Clock } from '../../../platform/clock/clock.js';
import type { Db } from '../../../platform/db/database.js';
import type { SecretBox } from '../../../platform/crypto/sealed.js';
import type { EventBus } from '../../../platform/events/event-bus.js';
import { createInvalidatingCache } from '../../../platform/events/invalidating-cache.js';
import { AppError } from '../../../platform/http/errors.js';
import { LATENCY_BUCKETS, metricsOrPrivate, type Metrics } from '../../../platform/metrics/metrics.js';
import { createPoolCredentials } from './pool-credentials.js';
import { createPoolHealth, type ProviderStatusSink } from './pool-health.js';
import { createSpendBook, overBudget } from './pool-spend.js';
import { UpstreamError, type ProviderAdapter, type UpstreamCredential } from '../providers/types.js';
import type { ProviderEntry } from './registry.js';

export interface PoolDeps {
  db: Db;
  clock: Clock;
  logger: FastifyBaseLogger;
  catalog: ProviderStatusSink;
  registry: Map<string, ProviderEntry>;
  metrics?: Metrics;
  /** Opens the keys of accounts operators added (stored encrypted). */
  secrets: SecretBox;
  /** Hears other instances' account changes (the `provider_accounts` trigger); without it the cache TTL bounds staleness. */
  events?: EventBus;
}

/** The accounts cache; its NOTIFY channel (`cache_<name>`) is the one the `provider_accounts` trigger announces a provider slug on (migration 0026). */
const ACCOUNTS_CACHE = 'provider_accounts';
export const ACCOUNTS_CACHE_CHANNEL = `cache_${ACCOUNTS_CACHE}`;

/** After a failure an account goes to the back of the queue for this long, then is tried normally again. */
const FAILURE_COOLDOWN_MS = 30_000;
/**
 * Account rows are re-read at most this often per provider and instance (this instance's own failures and
 * recoveries refresh them at once); spend read from the cache may trail other instances by this much.
 */
const ACCOUNTS_CACHE_MS = 1_000;

export interface PoolOutcome<T> {
  value: T;
  accountId: string;
  accountsTried: number;
}

type AccountRow = typeof providerAccounts.$inferSelect;

/**
 * The upstream-account pool: several credentials per provider, state shared through `provider_accounts`.
 * A call tries accounts one after another, never the same one twice, skipping those over their monthly budget;
 * 429, 5xx, timeouts, network errors and rejected keys fail over to the next account. The provider is DEGRADED
 * while accounts fail and ACTIVE again once one works. The credentials (pool-credentials.ts), the spend
 * (pool-spend.ts) and the health (pool-health.ts) have their own files.
 */
export function createUpstreamPool(deps: PoolDeps) {
  const { db, clock, logger, catalog, registry, secrets, events } = deps;
  const upstreamSeconds = metricsOrPrivate(deps.metrics).histogram({
    name: 'storefront_gateway_upstream_duration_seconds',
    help: 'Upstream provider calls (each account tried) by provider and outcome (ok, or the failure kind): time to the answer, or to the stream opening',
    labelNames: ['provider', 'outcome'],
    buckets: LATENCY_BUCKETS,
  });
  const credentials = createPoolCredentials({ db, clock, logger, registry, secrets });
  const rotation = new Map<string, number>();
  /** Account rows per provider: concurrent misses share one read; other instances' changes arrive through the trigger. */
  const cache = createInvalidatingCache<AccountRow[]>({
    name: ACCOUNTS_CACHE,
    bus: events,
    ttlMs: ACCOUNTS_CACHE_MS,
    load: (providerSlug) => db.select().from(providerAccounts).where(eq(providerAccounts.providerSlug, providerSlug)),
  });
  const spend = createSpendBook({ db, clock, logger });
  const health = createPoolHealth({ db, clock, logger, catalog, forget: (providerSlug) => cache.forget(providerSlug) });

  async function accountRows(providerSlug: string): Promise<AccountRow[]> {
    const rows = await cache.get(providerSlug);
    spend.handedOut(providerSlug, rows);
    return rows;
  }

  /** Healthy accounts first (rotated to spread load), accounts that failed recently last. */
  function order(rows: AccountRow[], providerSlug: string, now: Date): AccountRow[] {
    const coolingDown = (row: AccountRow) =>
      row.status === 'FAILING' && row.lastFailureAt !== null && now.getTime() - row.lastFailureAt.getTime() < FAILURE_COOLDOWN_MS;
    const turn = rotation.get(providerSlug) ?? 0;
    rotation.set(providerSlug, turn + 1);
    if (rows.length === 1) return rows;
    // Ids are lowercase UUIDs: comparing code units orders them as their text does.
    const sorted = [...rows].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const rotated = sorted.map((_, i) => sorted[(i + turn) % sorted.length]!);
    return [...rotated.filter((r) => !coolingDown(r)), ...rotated.filter(coolingDown)];
  }

  return {
    adapterOf(providerSlug: string): ProviderAdapter | null {
      return registry.get(providerSlug)?.adapter ?? null;
    },

    markFailure: health.markFailure,

    /** The credential of one account configured in this instance (a job polls with the account that took it), or null. */
    credentialById(accountId: string): UpstreamCredential | null {
      return credentials.byId(accountId);
    },

    /**
     * Runs `attempt` on the provider's accounts until one succeeds. Errors that are not the account's fault
     * (the request or the model was refused) are thrown as they are, without trying another account.
     */
    async run<T>(providerSlug: string, attempt: (adapter: ProviderAdapter, credential: UpstreamCredential) => Promise<T>): Promise<PoolOutcome<T>> {
      const entry = registry.get(providerSlug);
      const now = clock.now();
      const rows = entry ? await accountRows(providerSlug) : [];
      const usable = rows.filter((row) => credentials.of(row) !== null);
      const withinBudget = usable.filter((row) => !overBudget(row, now));
      const accountsOverBudget = usable.length - withinBudget.length;
      const tried = new Set<string>();
      let lastError: UpstreamError | null = null;

      for (const row of order(withinBudget, providerSlug, now)) {
        if (tried.has(row.id)) continue;
        tried.add(row.id);
        const started = performance.now();
        const elapsed = () => (performance.now() - started) / 1000;
        try {
          const value = await attempt(entry!.adapter, credentials.of(row)!);
          upstreamSeconds.observe({ provider: providerSlug, outcome: 'ok' }, elapsed());
          await health.markSuccess(providerSlug, row);
          return { value, accountId: row.id, accountsTried: tried.size };
        } catch (err) {
          if (err instanceof UpstreamError) upstreamSeconds.observe({ provider: providerSlug, outcome: err.kind }, elapsed());
          // Only what the upstream did moves on to another account; our own bugs surface as they are.
          if (!(err instanceof UpstreamError) || !err.accountFailure) throw err;
          const error = err;
          lastError = error;
          await health.markFailure(providerSlug, row.id, error);
        }
      }

      const reason = lastError
        ? `${lastError.message}`
        : accountsOverBudget > 0
          ? 'every upstream account has used its monthly budget'
          : 'no enabled upstream account is configured';
      throw new AppError(
        503,
        'PROVIDER_UNAVAILABLE',
        `The provider "${providerSlug}" is unavailable right now (${reason}). Retry with backoff, or choose another model.`,
        {
          upstream: lastError ? lastError.toDetails() : { code: accountsOverBudget > 0 ? 'budget_exhausted' : 'no_account', status: null, message: reason },
          accountsTried: tried.size,
          accountsOverBudget,
        },
      );
    },

    /** Adds provider cost to the account's spend of the current month (a new month starts from zero). */
    recordSpend(accountId: string, micros: number): void {
      spend.record(accountId, micros);
    },

    flushSpend: () => spend.flush(),

    /** Writes what is still pending (at shutdown). */
    async stop(): Promise<void> {
      await spend.flush();
    },

    /**
     * At start: registers the configured accounts and proves each credential with a cheap call. A provider with a
     * working credential becomes ACTIVE; one whose keys are all rejected INACTIVE; one that could not be reached
     * DEGRADED (it is tried, and recovers on the first success). Providers with no account are INACTIVE.
     */
    async start(): Promise<void> {
      cache.forgetAll();
      await credentials.sync();
      const rows = await db.select().from(providerAccounts);
      await Promise.all([...registry.values()].map((entry) => health.checkProvider(entry, rows, credentials)));
    },

    /** Forgets the cached account rows (after an operator changed them); other instances hear the table's trigger. */
    refresh(providerSlug?: string): void {
      if (providerSlug) cache.forget(providerSlug);
      else cache.forgetAll();
    },

    /** Whether this instance has an adapter for the provider (accounts can only be added to those). */
    serves(providerSlug: string): boolean {
      return registry.has(providerSlug);
    },

    /** Whether this instance can call with the account (enabled, and its key configured here or opened). */
    usable(row: AccountRow): boolean {
      return credentials.of(row) !== null;
    },

    /** Accounts of a provider with their shared state (secrets excluded), for operators and tests. */
    async accounts(providerSlug: string) {
      await spend.flush();
      const rows = await db.select().from(providerAccounts).where(eq(providerAccounts.providerSlug, providerSlug));
      return rows.map(({ keyFingerprint: _fingerprint, encryptedApiKey: _sealed, ...row }) => ({ ...row, configuredHere: credentials.configuredHere(row.id) }));
    },
  };
}

export type UpstreamPool = ReturnType<typeof createUpstreamPool>;
