import { Type } from 'typebox';
import { USAGE_STATUSES } from '../../db/schema/usage.js';
import { DateTime, Nullable, Page, StrictObject } from '../../platform/http/schemas.js';

export const USAGE_FEED_MAX_LIMIT = 100;

export const UsageQuery = StrictObject({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: USAGE_FEED_MAX_LIMIT, default: 20, description: '1-100, default 20' })),
  cursor: Type.Optional(Type.String({ format: 'uuid', description: 'The nextCursor of the previous page (the id of its last row)' })),
  operation: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'e.g. text.generate' })),
  status: Type.Optional(Type.Enum(USAGE_STATUSES)),
  apiKeyId: Type.Optional(Type.String({ format: 'uuid', description: 'Only the calls made with this API key (its id from GET /v1/account/api-keys)' })),
});

/** A text call's model tokens by class, as the provider reported them (`cachedInput` and `cacheWrite` are parts of `input`, `cacheWrite1h` of `cacheWrite`). */
export const TokenBreakdown = Type.Object(
  {
    input: Type.Integer({ description: 'Every input token' }),
    cachedInput: Type.Integer({ description: "Of input: read from the provider's prompt cache (billed at the cached price)" }),
    cacheWrite: Type.Integer({ description: "Of input: written to the provider's prompt cache (billed at the cache-write price)" }),
    cacheWrite1h: Type.Optional(
      Type.Integer({
        description: 'Of cacheWrite: written to a 1-hour cache entry (Anthropic ttl 1h, billed at the 1-hour write price); present when there were some',
      }),
    ),
    output: Type.Integer({ description: 'Every output token' }),
    reasoning: Type.Integer({ description: 'Of output: spent on reasoning' }),
  },
  { description: 'Text calls only (absent on other operations and on records made before the breakdown was kept)' },
);

export const UsageRecord = Type.Object({
  id: Type.String(),
  userId: Type.String(),
  subscriptionId: Nullable(Type.String()),
  modelId: Nullable(Type.String()),
  providerId: Nullable(Type.String()),
  resellerAccountId: Nullable(Type.String({ description: 'The upstream account that served the call' })),
  jobId: Nullable(Type.String()),
  apiKeyId: Nullable(Type.String({ description: 'The API key that made the call; null for access tokens' })),
  requestId: Type.String({ description: 'The gateway idempotency id of the call' }),
  operation: Type.String(),
  status: Type.Enum(USAGE_STATUSES),
  inputUnits: Type.Integer(),
  outputUnits: Type.Integer({ description: 'Tokens, images or video seconds' }),
  creditsConsumed: Type.Integer({ description: 'Wallet tokens charged' }),
  providerCostCents: Type.Integer(),
  latencyMs: Type.Integer(),
  metadata: Type.Object({}, { additionalProperties: true }),
  tokens: Type.Optional(TokenBreakdown),
  createdAt: DateTime,
  model: Nullable(Type.Object({ slug: Type.String(), displayName: Type.String(), type: Type.String() })),
});

export const UsagePage = Page(UsageRecord);

export const UsageSummaryQuery = StrictObject({
  window: Type.Optional(Type.Enum(['day', 'week', 'month'], { default: 'month', description: 'day = last 1 day, week = 7, month = 30 (default)' })),
});

const Count = Type.Object({ _all: Type.Integer() });

export const UsageSummary = Type.Object({
  window: Type.Enum(['day', 'week', 'month']),
  since: DateTime,
  byOperation: Type.Array(
    Type.Object({
      operation: Type.String(),
      status: Type.Enum(USAGE_STATUSES),
      _count: Count,
      _sum: Type.Object({
        inputUnits: Type.Integer(),
        outputUnits: Type.Integer(),
        creditsConsumed: Type.Integer(),
        latencyMs: Type.Integer(),
        cachedInputTokens: Type.Optional(
          Type.Integer({ description: "Of inputUnits: text input read from the provider's prompt cache, billed at the cached price" }),
        ),
        cacheWriteTokens: Type.Optional(Type.Integer({ description: "Of inputUnits: text input written to the provider's prompt cache" })),
        cacheWrite1hTokens: Type.Optional(
          Type.Integer({
            description: 'Of cacheWriteTokens: written to a 1-hour cache entry, billed at the 1-hour write price (present when there were some)',
          }),
        ),
        reasoningTokens: Type.Optional(Type.Integer({ description: 'Of outputUnits: text output spent on reasoning' })),
      }),
    }),
  ),
  byModel: Type.Array(Type.Object({ modelId: Nullable(Type.String()), _count: Count })),
  byApiKey: Type.Array(
    Type.Object({
      apiKeyId: Nullable(Type.String({ description: 'null: calls made with an access token' })),
      _count: Count,
      _sum: Type.Object({ creditsConsumed: Type.Integer() }),
    }),
  ),
});
