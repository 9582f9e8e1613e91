import { and, eq, sql } from 'drizzle-orm';
import type { FastifyBaseLogger } from 'fastify';
import { providerAccounts } from '../../db/schema/gateway.js';
import type { Clock } from '../../platform/clock/clock.js';
import type { Db } from '../../platform/db/database.js';
import { writeBehind } from '../../platform/db/write-behind.js';
import type { SecretBox } from '../../platform/crypto/sealed.js';
import type { EventBus } from '../../platform/events/event-bus.js';
import { createInvalidatingCache } from '../../platform/events/invalidating-cache.js';
import { AppError } from '../../platform/http/errors.js';
import { LATENCY_BUCKETS, metricsOrPrivate, type Metrics } from '../../platform/metrics/metrics.js';
import { UpstreamError, type ProviderAdapter, type UpstreamCredential } from './providers/types.js';
import { DEFAULT_TIMEOUT_MS, type ProviderEntry } from './registry.js';

export type ProviderStatusValue = 'ACTIVE' | 'DEGRADED' | 'INACTIVE' | 'DISABLED';

/** What the pool needs from the catalog: to read and publish a provider's health. */
export interface ProviderStatusSink {
  setProviderStatus(providerSlug: string, status: ProviderStatusValue): Promise<unknown>;
  snapshot(): Promise<{ providersBySlug: Map<string, { status: string }> }>;
}

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

/** The accounts cache; its NOTIFY channel (`cache_<name>`) is the one the `provider_accounts` trigger announces a provider slug on (migration 0018). */
const ACCOUNTS_CACHE = 'provider_accounts';
export const ACCOUNTS_CACHE_CHANNEL = `cache_${ACCOUNTS_CACHE}`;

/** After a failure an account goes to the back of the queue for this long, then is tried normally again. */
const FAILURE_COOLDOWN_MS = 30_000;
/** Startup credential checks give up after this long per account. */
const CHECK_TIMEOUT_MS = 10_000;
/**
 * Account rows are re-read at most this often per provider and instance (this instance's own failures and
 * recoveries refresh them at once); spend read from the cache may trail other instances by this much.
 */
const ACCOUNTS_CACHE_MS = 1_000;
/**
 * Spend is added up in memory and written once a second as one increment per account, instead of every request
 * writing (and locking) the same row. Increments are atomic, so several instances add up correctly.
 */
const SPEND_FLUSH_MS = 1_000;

export interface PoolOutcome<T> {
  value: T;
  accountId: string;
  accountsTried: number;
}

type AccountRow = typeof providerAccounts.$inferSelect;

const periodOf = (date: Date) => date.toISOString().slice(0, 7);

/**
 * The upstream-account pool: several credentials per provider, state shared through `provider_accounts`.
 * A call tries accounts one after another, never the same one twice, skipping those over their monthly budget;
 * 429, 5xx, timeouts, network errors and rejected keys fail over to the next account. The provider is DEGRADED
 * while accounts fail and ACTIVE again once one works.
 */
export function createUpstreamPool(deps: PoolDeps) {
  const { db, clock, logger, catalog, registry, secrets, events } = deps;
  const upstreamSeconds = metricsOrPrivate(deps.metrics).histogram({
    name: 'storefront_gateway_upstream_duration_seconds',
    help: 'Upstream provider calls (each account tried) by provider and outcome (ok, or the failure kind): time to the answer, or to the stream opening',
    labelNames: ['provider', 'outcome'],
    buckets: LATENCY_BUCKETS,
  });
  /** accountId -> the credential of an account configured in this instance, built once (secrets stay in memory). */
  const credentials = new Map<string, UpstreamCredential>();
  const rotation = new Map<string, number>();
  /** Account rows per provider: concurrent misses share one read; other instances' changes arrive through the trigger. */
  const cache = createInvalidatingCache<AccountRow[]>({
    name: ACCOUNTS_CACHE,
    bus: events,
    ttlMs: ACCOUNTS_CACHE_MS,
    load: (providerSlug) => db.select().from(providerAccounts).where(eq(providerAccounts.providerSlug, providerSlug)),
  });
  /** The rows last handed out per provider (the cache's own arrays): this instance's spend is added to them at once. */
  const handedOut = new Map<string, AccountRow[]>();
  const spend = writeBehind<number>({
    delayMs: SPEND_FLUSH_MS,
    merge: (pending, micros) => pending + micros,
    async write(batch) {
      const now = clock.now();
      const period = periodOf(now);
      for (const [accountId, micros] of batch) {
        try {
          await db
            .update(providerAccounts)
            .set({
              spendMicros: sql`case when ${providerAccounts.spendPeriod} = ${period} then ${providerAccounts.spendMicros} + ${micros} else ${micros} end`,
              spendPeriod: period,
              updatedAt: now,
            })
            .where(eq(providerAccounts.id, accountId));
        } catch (err) {
          logger.warn({ err, accountId }, 'recording upstream spend failed; retrying with the next batch');
          spend.add(accountId, micros);
        }
      }
    },
  });
  /** Opened keys of OPERATOR accounts, by account id, with the sealed value they came from (a new key re-opens). */
  const opened = new Map<string, { sealed: string; credential: UpstreamCredential | null }>();

  async function accountRows(providerSlug: string): Promise<AccountRow[]> {
    const rows = await cache.get(providerSlug);
    handedOut.set(providerSlug, rows);
    return rows;
  }

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
        credentials.set(row!.id, { accountId: row!.id, providerSlug: account.providerSlug, apiKey: account.apiKey, baseUrl: account.baseUrl, timeoutMs: account.timeoutMs });
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
      logger.error({ providerSlug: row.providerSlug, accountId: row.id, err: err instanceof Error ? err.message : String(err) }, 'an upstream account key cannot be decrypted; the account is skipped');
    }
    opened.set(row.id, { sealed: row.encryptedApiKey, credential });
    return credential;
  }

  /** The credential of an enabled account this instance can call with, or null. */
  const credentialOf = (row: AccountRow): UpstreamCredential | null => {
    if (!row.enabled) return null;
    if (row.source === 'OPERATOR') return operatorCredential(row);
    return credentials.get(row.id) ?? null;
  };

  const overBudget = (row: AccountRow, now: Date) =>
    row.monthlyBudgetCents !== null && row.spendPeriod === periodOf(now) && row.spendMicros >= row.monthlyBudgetCents * 1_000_000;

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
    cache.forget(providerSlug);
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
      cache.forget(providerSlug);
    }
    await publish(providerSlug, 'ACTIVE');
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

    markFailure,

    /** The credential of one account configured in this instance (a job polls with the account that took it), or null. */
    credentialById(accountId: string): UpstreamCredential | null {
      return credentials.get(accountId) ?? opened.get(accountId)?.credential ?? null;
    },

    /**
     * Runs `attempt` on the provider's accounts until one succeeds. Errors that are not the account's fault
     * (the request or the model was refused) are thrown as they are, without trying another account.
     */
    async run<T>(providerSlug: string, attempt: (adapter: ProviderAdapter, credential: UpstreamCredential) => Promise<T>): Promise<PoolOutcome<T>> {
      const entry = registry.get(providerSlug);
      const now = clock.now();
      const rows = entry ? await accountRows(providerSlug) : [];
      const usable = rows.filter((row) => credentialOf(row) !== null);
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
          const value = await attempt(entry!.adapter, credentialOf(row)!);
          upstreamSeconds.observe({ provider: providerSlug, outcome: 'ok' }, elapsed());
          await markSuccess(providerSlug, row);
          return { value, accountId: row.id, accountsTried: tried.size };
        } catch (err) {
          if (err instanceof UpstreamError) upstreamSeconds.observe({ provider: providerSlug, outcome: err.kind }, elapsed());
          // Only what the upstream did moves on to another account; our own bugs surface as they are.
          if (!(err instanceof UpstreamError) || !err.accountFailure) throw err;
          const error = err;
          lastError = error;
          await markFailure(providerSlug, row.id, error);
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
      if (micros <= 0) return;
      const period = periodOf(clock.now());
      for (const rows of handedOut.values()) {
        const row = rows.find((r) => r.id === accountId);
        if (row) Object.assign(row, { spendMicros: row.spendPeriod === period ? row.spendMicros + micros : micros, spendPeriod: period });
      }
      spend.add(accountId, micros);
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
      await syncAccounts();
      const rows = await db.select().from(providerAccounts);
      await Promise.all(
        [...registry.values()].map(async (entry) => {
          const own = rows.filter((row) => row.providerSlug === entry.slug && credentialOf(row) !== null);
          if (own.length === 0) {
            if (entry.adapter.kind !== 'local') await publish(entry.slug, 'INACTIVE');
            return;
          }
          const results = await Promise.all(
            own.map(async (row) => {
              try {
                const credential = credentialOf(row)!;
                await withTimeout(entry.adapter.checkCredential({ ...credential, timeoutMs: Math.max(credential.timeoutMs, CHECK_TIMEOUT_MS) }), CHECK_TIMEOUT_MS);
                await markSuccess(entry.slug, { ...row, status: 'FAILING' });
                return 'ok' as const;
              } catch (err) {
                const error = err instanceof UpstreamError ? err : new UpstreamError('timeout', err instanceof Error ? err.message : String(err));
                const now = clock.now();
                await db
                  .update(providerAccounts)
                  .set({ status: 'FAILING', lastErrorCode: error.code ?? error.kind, lastErrorMessage: error.message.slice(0, 500), lastFailureAt: now, updatedAt: now })
                  .where(and(eq(providerAccounts.id, row.id)));
                logger.warn({ provider: entry.slug, account: row.label, kind: error.kind, status: error.status }, 'upstream credential check failed');
                return error.kind;
              }
            }),
          );
          if (results.includes('ok')) await publish(entry.slug, 'ACTIVE');
          else if (results.every((kind) => kind === 'auth')) await publish(entry.slug, 'INACTIVE');
          else await publish(entry.slug, 'DEGRADED');
        }),
      );
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
      return credentialOf(row) !== null;
    },

    /** Accounts of a provider with their shared state (secrets excluded), for operators and tests. */
    async accounts(providerSlug: string) {
      await spend.flush();
      const rows = await db.select().from(providerAccounts).where(eq(providerAccounts.providerSlug, providerSlug));
      return rows.map(({ keyFingerprint: _fingerprint, encryptedApiKey: _sealed, ...row }) => ({ ...row, configuredHere: credentials.has(row.id) }));
    },
  };
}

export type UpstreamPool = ReturnType<typeof createUpstreamPool>;

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new UpstreamError('timeout', `No answer within ${ms / 1000} s.`)), ms);
    }),
  ]);
}
