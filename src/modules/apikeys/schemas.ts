import { Type } from 'typebox';
import { KEY_BUDGET_PERIODS, type KeyBudgetPeriod } from '../../db/schema/apikeys.js';
import { DateTime, Nullable, StrictObject } from '../../platform/http/schemas.js';

export const API_KEY_SCOPES = ['ai:text', 'ai:image', 'ai:video', 'ai:audio', 'ai:embed', 'jobs:read', 'jobs:write'] as const;
export type ApiKeyScope = (typeof API_KEY_SCOPES)[number];

export const MAX_LABEL_LENGTH = 80;

export const MAX_RATE_LIMIT_PER_MINUTE = 100_000;
export const MAX_ALLOWED_MODELS = 100;

const Label = Type.String({ minLength: 1, maxLength: MAX_LABEL_LENGTH, pattern: '\\S', description: '1-80 characters' });

/** Per-key controls (budget, rate limit, allowed models), optional on creation and in PATCH; null removes one. */
const controlFields = {
  budget: Type.Optional(
    Nullable(
      StrictObject(
        {
          tokens: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'Wallet tokens the key may spend per period (at least 1)' }),
          period: Type.Enum(KEY_BUDGET_PERIODS, { description: 'day and month are UTC calendar periods; total never resets' }),
        },
        { description: 'Calls that would take the period spend past `tokens` are refused with 429 KEY_BUDGET_EXCEEDED' },
      ),
    ),
  ),
  rateLimit: Type.Optional(
    Nullable(
      StrictObject(
        { requestsPerMinute: Type.Integer({ minimum: 1, maximum: MAX_RATE_LIMIT_PER_MINUTE, description: `1-${MAX_RATE_LIMIT_PER_MINUTE}` }) },
        { description: 'Past it, 429 RATE_LIMITED with Retry-After (shared across instances)' },
      ),
    ),
  ),
  allowedModels: Type.Optional(
    Nullable(
      Type.Array(Type.String({ minLength: 1, maxLength: 200 }), {
        minItems: 1,
        maxItems: MAX_ALLOWED_MODELS,
        description: 'Model slugs the key may call (any other: 403 MODEL_NOT_ALLOWED_FOR_KEY); null or omitted = every model of the plan',
      }),
    ),
  ),
};

export const CreateApiKeyBody = StrictObject({
  label: Label,
  scopes: Type.Array(Type.Enum(API_KEY_SCOPES), { minItems: 1, maxItems: 20, description: 'At least one scope' }),
  expiresAt: Type.Optional(Nullable(Type.String({ format: 'date-time', description: 'When the key stops working; omit or null for never' }))),
  ...controlFields,
});

export const UpdateApiKeyBody = StrictObject(
  { label: Type.Optional(Label), ...controlFields },
  { minProperties: 1, description: 'The fields to change; a control set to null is removed' },
);

export type KeyControlsInput = {
  budget?: { tokens: number; period: KeyBudgetPeriod } | null;
  rateLimit?: { requestsPerMinute: number } | null;
  allowedModels?: string[] | null;
};

export const ApiKeyIdParams = StrictObject({ id: Type.String({ format: 'uuid' }) });

const listedFields = {
  id: Type.String(),
  label: Type.String(),
  keyPrefix: Type.String({ description: 'The last 4 characters of the key' }),
  scopes: Type.String({ description: 'Comma-joined, e.g. "ai:text,jobs:read"' }),
  expiresAt: Nullable(DateTime),
  createdAt: DateTime,
  budget: Nullable(
    Type.Object({
      tokens: Type.Integer(),
      period: Type.Enum(KEY_BUDGET_PERIODS),
      spentTokens: Type.Integer({ description: 'Charged in the current period' }),
      reservedTokens: Type.Integer({ description: 'Held by calls still running' }),
      periodStart: DateTime,
      resetsAt: Nullable(DateTime),
    }),
  ),
  rateLimit: Nullable(Type.Object({ requestsPerMinute: Type.Integer() })),
  allowedModels: Nullable(Type.Array(Type.String())),
};

export const ApiKeyListed = Type.Object({ ...listedFields, lastUsedAt: Nullable(DateTime) });

export const ApiKeyCreated = Type.Object({
  ...listedFields,
  key: Type.String({ description: 'The raw key. It is shown only this once; store it now.' }),
});

export const ApiKeyList = Type.Object({ items: Type.Array(ApiKeyListed) });
