import { bigint, boolean, index, integer, jsonb, pgTable, primaryKey, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { createdAt, idColumn, tz } from './columns.js';

export const PROVIDER_ACCOUNT_STATUSES = ['ACTIVE', 'FAILING'] as const;
export type ProviderAccountStatus = (typeof PROVIDER_ACCOUNT_STATUSES)[number];
/** ENV: from `<PROVIDER>_API_KEY` (the secret stays in the environment); OPERATOR: added through the admin API. */
export const PROVIDER_ACCOUNT_SOURCES = ['ENV', 'OPERATOR'] as const;
export type ProviderAccountSource = (typeof PROVIDER_ACCOUNT_SOURCES)[number];

/**
 * One upstream credential of a provider (`<PROVIDER>_API_KEY` may list several, and operators add more). An ENV
 * account's secret stays in the environment; an OPERATOR account's is stored encrypted. The row is keyed by its SHA-256 fingerprint and carries the state every instance shares:
 * budget, spend this month, failures.
 */
export const providerAccounts = pgTable(
  'provider_accounts',
  {
    id: idColumn(),
    providerSlug: text('provider_slug').notNull(),
    /** SHA-256 of the key (or of the base URL for keyless servers such as a local Ollama). */
    keyFingerprint: text('key_fingerprint').notNull(),
    /** Last 4 characters of the key, for operators. */
    keyHint: text('key_hint'),
    label: text('label').notNull(),
    baseUrl: text('base_url'),
    /** Provider cost this account may spend per calendar month, in minor units of the provider's currency; null = no cap. */
    monthlyBudgetCents: bigint('monthly_budget_cents', { mode: 'number' }),
    /** Spend of `spendPeriod` in millionths of a minor unit. */
    spendMicros: bigint('spend_micros', { mode: 'number' }).notNull().default(0),
    /** `YYYY-MM` (UTC) the spend belongs to; a new month starts from zero. */
    spendPeriod: text('spend_period').notNull(),
    status: text('status', { enum: PROVIDER_ACCOUNT_STATUSES }).notNull().default('ACTIVE'),
    consecutiveFailures: integer('consecutive_failures').notNull().default(0),
    lastErrorCode: text('last_error_code'),
    lastErrorMessage: text('last_error_message'),
    lastFailureAt: tz('last_failure_at'),
    lastSuccessAt: tz('last_success_at'),
    /** When a call last started on this account (spreads load across accounts). */
    lastUsedAt: tz('last_used_at'),
    source: text('source', { enum: PROVIDER_ACCOUNT_SOURCES }).notNull().default('ENV'),
    /** An operator may switch any account off; a disabled account is never called. */
    enabled: boolean('enabled').notNull().default(true),
    /** OPERATOR accounts: the key sealed with AES-256-GCM (`platform/crypto/sealed.ts`); never returned by the API. */
    encryptedApiKey: text('encrypted_api_key'),
    createdAt: createdAt(),
    updatedAt: tz('updated_at').notNull().defaultNow(),
  },
  (t) => [uniqueIndex('provider_accounts_fingerprint_key').on(t.providerSlug, t.keyFingerprint)],
);

/** CHARGED: the charge committed and the answer is being sent (or was lost with a crash): the key is never freed. */
export const IDEMPOTENCY_STATUSES = ['IN_PROGRESS', 'CHARGED', 'COMPLETED'] as const;

/** A gateway call made with an `Idempotency-Key`: the first answer is kept and replayed without charging again. */
export const gatewayIdempotency = pgTable(
  'gateway_idempotency',
  {
    id: idColumn(),
    userId: uuid('user_id').notNull(),
    key: text('key').notNull(),
    /** The route the key was first used on, e.g. `POST /v1/ai/text`. */
    route: text('route').notNull(),
    /** SHA-256 of the canonical JSON body: the same key with another body is refused. */
    bodyHash: text('body_hash').notNull(),
    requestId: text('request_id').notNull(),
    status: text('status', { enum: IDEMPOTENCY_STATUSES }).notNull().default('IN_PROGRESS'),
    responseStatus: integer('response_status'),
    response: jsonb('response').$type<Record<string, unknown>>(),
    createdAt: createdAt(),
    completedAt: tz('completed_at'),
    expiresAt: tz('expires_at').notNull(),
  },
  (t) => [uniqueIndex('gateway_idempotency_key').on(t.userId, t.key), index('gateway_idempotency_expiry_idx').on(t.expiresAt)],
);

/**
 * An operator's ordered fallbacks of a model: when every upstream account of the model's provider fails
 * with a retryable error, the call moves to the first fallback the caller may use. Position 0 is tried first.
 */
export const modelFallbacks = pgTable(
  'model_fallbacks',
  {
    modelId: uuid('model_id').notNull(),
    position: integer('position').notNull(),
    fallbackModelId: uuid('fallback_model_id').notNull(),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.modelId, t.position] }), uniqueIndex('model_fallbacks_pair_key').on(t.modelId, t.fallbackModelId)],
);
