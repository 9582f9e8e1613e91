import { bigint, index, integer, pgTable, primaryKey, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { users } from './auth.js';
import { createdAt, idColumn, tz } from './columns.js';

export const KEY_BUDGET_PERIODS = ['day', 'month', 'total'] as const;
export type KeyBudgetPeriod = (typeof KEY_BUDGET_PERIODS)[number];

/** A user's API key for server-to-server calls on /v1/ai/*. Only the SHA-256 of the raw key is stored. */
export const apiKeys = pgTable(
  'api_keys',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    label: text('label').notNull(),
    keyHash: text('key_hash').notNull(),
    /** The last 4 characters of the raw key. */
    keyPrefix: text('key_prefix').notNull(),
    scopes: text('scopes').array().notNull(),
    expiresAt: tz('expires_at'),
    lastUsedAt: tz('last_used_at'),
    createdAt: createdAt(),
    revokedAt: tz('revoked_at'),
    /** Per-key controls (budget, rate limit, allowed models); null = none. */
    budgetTokens: bigint('budget_tokens', { mode: 'number' }),
    budgetPeriod: text('budget_period', { enum: KEY_BUDGET_PERIODS }),
    rateLimitPerMinute: integer('rate_limit_per_minute'),
    /** Model slugs the key may call; null = every model of the plan. */
    allowedModels: text('allowed_models').array(),
  },
  (t) => [uniqueIndex('api_keys_hash_key').on(t.keyHash), index('api_keys_user_idx').on(t.userId, t.createdAt)],
);

/**
 * A budgeted key's spend per period (`period_start`: the UTC day or month it counts, 1970-01-01 for `total`).
 * `reserved` is what open calls hold; a reservation moves its tokens from reserved to spent at the real cost.
 */
export const apiKeySpend = pgTable(
  'api_key_spend',
  {
    apiKeyId: uuid('api_key_id')
      .notNull()
      .references(() => apiKeys.id),
    periodStart: tz('period_start').notNull(),
    spent: bigint('spent', { mode: 'number' }).notNull().default(0),
    reserved: bigint('reserved', { mode: 'number' }).notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.apiKeyId, t.periodStart] })],
);

/** One open call's hold on its key's budget, by the gateway request id; deleting it is what settles it, once. */
export const apiKeyBudgetHolds = pgTable('api_key_budget_holds', {
  requestId: text('request_id').primaryKey(),
  apiKeyId: uuid('api_key_id').notNull(),
  periodStart: tz('period_start').notNull(),
  tokens: bigint('tokens', { mode: 'number' }).notNull(),
  createdAt: createdAt(),
});
