import { and, desc, eq, sql, type SQL } from 'drizzle-orm';
import { usageRecords, type UsageStatus } from '../../db/schema/usage.js';
import type { DbOrTx } from '../../platform/db/database.js';
import { badRequest } from '../../platform/http/errors.js';

export type UsageRow = typeof usageRecords.$inferSelect;

export interface UsageFeedQuery {
  limit: number;
  /** The id of the last row of the previous page. */
  cursor?: string;
  operation?: string;
  status?: UsageStatus;
  /** Only the calls made with this API key. */
  apiKeyId?: string;
}

export const SUMMARY_WINDOWS = { day: 1, week: 7, month: 30 } as const;
export type SummaryWindow = keyof typeof SUMMARY_WINDOWS;

export interface OperationTotals {
  operation: string;
  status: UsageStatus;
  _count: { _all: number };
  _sum: {
    inputUnits: number;
    outputUnits: number;
    creditsConsumed: number;
    latencyMs: number;
    cachedInputTokens: number;
    cacheWriteTokens: number;
    cacheWrite1hTokens?: number;
    reasoningTokens: number;
  };
}

export interface ApiKeyTotals {
  apiKeyId: string | null;
  _count: { _all: number };
  _sum: { creditsConsumed: number };
}

export interface ModelTotals {
  modelId: string | null;
  _count: { _all: number };
}

const invalidCursor = () =>
  badRequest('The cursor is not valid. Use the nextCursor value from the previous page, or omit it to start over.', { field: 'query.cursor' });

/**
 * One page of a user's usage, newest first by (created_at, id). The cursor is the id of the last row returned; the
 * page continues strictly below that row's position, so every row is returned once even while rows are inserted
 * (new rows sort above the cursor). One query: the cursor row's position is read inside it, and only an empty page
 * asks whether the cursor exists (a foreign or unknown id is a 400, not a silent empty page).
 */
export async function usagePage(db: DbOrTx, userId: string, query: UsageFeedQuery): Promise<{ rows: UsageRow[]; nextCursor: string | null }> {
  const conditions: SQL[] = [eq(usageRecords.userId, userId)];
  if (query.operation !== undefined) conditions.push(eq(usageRecords.operation, query.operation));
  if (query.status !== undefined) conditions.push(eq(usageRecords.status, query.status));
  if (query.apiKeyId !== undefined) conditions.push(eq(usageRecords.apiKeyId, query.apiKeyId));
  if (query.cursor !== undefined) {
    conditions.push(
      sql`(${usageRecords.createdAt}, ${usageRecords.id}) < (select c.created_at, c.id from usage_records c where c.id = ${query.cursor} and c.user_id = ${userId})`,
    );
  }
  const rows = await db
    .select()
    .from(usageRecords)
    .where(and(...conditions))
    .orderBy(desc(usageRecords.createdAt), desc(usageRecords.id))
    .limit(query.limit + 1);
  if (rows.length === 0 && query.cursor !== undefined) {
    const [known] = await db
      .select({ id: usageRecords.id })
      .from(usageRecords)
      .where(and(eq(usageRecords.id, query.cursor), eq(usageRecords.userId, userId)));
    if (!known) throw invalidCursor();
  }
  const page = rows.slice(0, query.limit);
  return { rows: page, nextCursor: rows.length > query.limit ? page[page.length - 1]!.id : null };
}

/** The token classes a record's metadata holds (`tokens`, written by the text gateway); rows without them count 0. */
const TOKEN_CLASSES = {
  cachedInputTokens: 'cachedInput',
  cacheWriteTokens: 'cacheWrite',
  cacheWrite1hTokens: 'cacheWrite1h',
  reasoningTokens: 'reasoning',
} as const;
const classSum = (key: string) =>
  sql.raw(`coalesce(sum(case when jsonb_typeof(metadata->'tokens'->'${key}') = 'number' then (metadata->'tokens'->>'${key}')::numeric end), 0)::bigint`);

/**
 * Totals of a user's usage since `since`, by operation and status, by model and by API key (null: access tokens), in
 * one pass over the user's window of the index (GROUPING SETS). The index carries every column grouped and summed but
 * the metadata, which the token classes' sums (cached input, cache writes, reasoning) read from the rows.
 */
export async function usageTotals(
  db: DbOrTx,
  userId: string,
  since: Date,
): Promise<{ byOperation: OperationTotals[]; byModel: ModelTotals[]; byApiKey: ApiKeyTotals[] }> {
  const result = await db.execute(sql`
    select grouping(operation, status) = 0 as by_operation, grouping(api_key_id) = 0 as by_key, operation, status, model_id, api_key_id,
      count(*)::int as count,
      coalesce(sum(input_units), 0)::bigint as input_units,
      coalesce(sum(output_units), 0)::bigint as output_units,
      coalesce(sum(credits_consumed), 0)::bigint as credits_consumed,
      coalesce(sum(latency_ms), 0)::bigint as latency_ms,
      ${classSum(TOKEN_CLASSES.cachedInputTokens)} as cached_input_tokens,
      ${classSum(TOKEN_CLASSES.cacheWriteTokens)} as cache_write_tokens,
      ${classSum(TOKEN_CLASSES.cacheWrite1hTokens)} as cache_write_1h_tokens,
      ${classSum(TOKEN_CLASSES.reasoningTokens)} as reasoning_tokens
    from usage_records
    where user_id = ${userId} and created_at >= ${since.toISOString()}::timestamptz
    group by grouping sets ((operation, status), (model_id), (api_key_id))
    order by by_operation desc, operation, status, count desc, model_id nulls last, api_key_id nulls last`);
  type Row = {
    by_operation: boolean;
    by_key: boolean;
    api_key_id: string | null;
    operation: string | null;
    status: UsageStatus | null;
    model_id: string | null;
    count: number;
    input_units: string | number;
    output_units: string | number;
    credits_consumed: string | number;
    latency_ms: string | number;
    cached_input_tokens: string | number;
    cache_write_tokens: string | number;
    cache_write_1h_tokens: string | number;
    reasoning_tokens: string | number;
  };
  const rows = (result as { rows: Row[] }).rows;
  return {
    byOperation: rows
      .filter((row) => row.by_operation)
      .map((row) => ({
        operation: row.operation!,
        status: row.status!,
        _count: { _all: row.count },
        _sum: {
          inputUnits: Number(row.input_units),
          outputUnits: Number(row.output_units),
          creditsConsumed: Number(row.credits_consumed),
          latencyMs: Number(row.latency_ms),
          cachedInputTokens: Number(row.cached_input_tokens),
          cacheWriteTokens: Number(row.cache_write_tokens),
          // Of the cache writes, the 1-hour ones: shown only when there were some (most windows have none).
          ...(Number(row.cache_write_1h_tokens) > 0 ? { cacheWrite1hTokens: Number(row.cache_write_1h_tokens) } : {}),
          reasoningTokens: Number(row.reasoning_tokens),
        },
      })),
    byModel: rows.filter((row) => !row.by_operation && !row.by_key).map((row) => ({ modelId: row.model_id, _count: { _all: row.count } })),
    byApiKey: rows
      .filter((row) => row.by_key)
      .map((row) => ({ apiKeyId: row.api_key_id, _count: { _all: row.count }, _sum: { creditsConsumed: Number(row.credits_consumed) } })),
  };
}
