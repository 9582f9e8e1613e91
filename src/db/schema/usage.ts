import { sql } from 'drizzle-orm';
import { bigint, index, integer, jsonb, pgTable, text, uuid } from 'drizzle-orm/pg-core';
import { createdAt, idColumn } from './columns.js';

export const USAGE_STATUSES = ['SUCCESS', 'FAILED', 'PARTIAL', 'TIMEOUT'] as const;
export type UsageStatus = (typeof USAGE_STATUSES)[number];

/** One row per metered gateway request (spec A "Usage record"). */
export const usageRecords = pgTable(
  'usage_records',
  {
    id: idColumn(),
    userId: uuid('user_id').notNull(),
    subscriptionId: uuid('subscription_id'),
    modelId: uuid('model_id'),
    providerId: uuid('provider_id'),
    /** The upstream account (provider_accounts row) that served the call; the column keeps the spec's name. */
    providerAccountId: uuid('reseller_account_id'),
    jobId: uuid('job_id'),
    /** The API key that made the call; null for access tokens. */
    apiKeyId: uuid('api_key_id'),
    /** The gateway request id (the wallet's idempotency id). */
    requestId: text('request_id').notNull(),
    operation: text('operation').notNull(),
    status: text('status', { enum: USAGE_STATUSES }).notNull(),
    inputUnits: integer('input_units').notNull().default(0),
    outputUnits: integer('output_units').notNull().default(0),
    tokensConsumed: bigint('credits_consumed', { mode: 'number' }).notNull().default(0),
    providerCostCents: integer('provider_cost_cents').notNull().default(0),
    latencyMs: integer('latency_ms').notNull().default(0),
    metadata: jsonb('metadata').$type<Record<string, unknown>>().notNull().default({}),
    createdAt: createdAt(),
  },
  (t) => [
    /**
     * Serves both reads of a user's usage: the feed walks it newest first by (created_at, id); the summary reads a
     * window of it index-only, the columns it groups and sums being carried in the index (INCLUDE). Drizzle's index
     * builder has no INCLUDE, so the key list is written as one SQL fragment that closes the key list itself.
     */
    index('usage_records_user_feed_idx').on(
      sql`"user_id", "created_at", "id") INCLUDE ("operation", "status", "model_id", "input_units", "output_units", "credits_consumed", "latency_ms", "api_key_id"`,
    ),
    index('usage_records_request_idx').on(t.requestId),
    // The feed of one API key's calls (`GET /v1/usage?apiKeyId=`).
    index('usage_records_key_feed_idx')
      .on(t.userId, t.apiKeyId, t.createdAt, t.id)
      .where(sql`${t.apiKeyId} is not null`),
  ],
);
