import { Type } from 'typebox';
import { DateTime, Nullable, StrictObject } from '../../platform/http/schemas.js';

export const API_KEY_SCOPES = ['ai:text', 'ai:image', 'ai:video', 'ai:audio', 'jobs:read', 'jobs:write'] as const;
export type ApiKeyScope = (typeof API_KEY_SCOPES)[number];

export const MAX_LABEL_LENGTH = 80;

export const CreateApiKeyBody = StrictObject({
  label: Type.String({ minLength: 1, maxLength: MAX_LABEL_LENGTH, pattern: '\\S', description: '1-80 characters' }),
  scopes: Type.Array(Type.Enum(API_KEY_SCOPES), { minItems: 1, maxItems: 20, description: 'At least one scope' }),
  expiresAt: Type.Optional(Nullable(Type.String({ format: 'date-time', description: 'When the key stops working; omit or null for never' }))),
});

export const ApiKeyIdParams = StrictObject({ id: Type.String({ format: 'uuid' }) });

const listedFields = {
  id: Type.String(),
  label: Type.String(),
  keyPrefix: Type.String({ description: 'The last 4 characters of the key' }),
  scopes: Type.String({ description: 'Comma-joined, e.g. "ai:text,jobs:read"' }),
  expiresAt: Nullable(DateTime),
  createdAt: DateTime,
};

export const ApiKeyListed = Type.Object({ ...listedFields, lastUsedAt: Nullable(DateTime) });

export const ApiKeyCreated = Type.Object({
  ...listedFields,
  key: Type.String({ description: 'The raw key. It is shown only this once; store it now.' }),
});

export const ApiKeyList = Type.Object({ items: Type.Array(ApiKeyListed) });
