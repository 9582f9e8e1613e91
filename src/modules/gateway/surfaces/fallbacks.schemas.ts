import { Type } from 'typebox';
import { Nullable, StrictObject } from '../../../platform/http/schemas.js';
import { MAX_FALLBACKS } from '../routing/fallback-models.js';

export const ModelIdParams = StrictObject({ id: Type.String({ format: 'uuid', description: 'The model id' }) });

export const SetFallbacksBody = StrictObject({
  fallbacks: Type.Array(Type.String({ minLength: 1, maxLength: 200 }), {
    maxItems: MAX_FALLBACKS,
    uniqueItems: true,
    description: `Model slugs of the same type, tried in this order (at most ${MAX_FALLBACKS}); [] removes them`,
  }),
  reason: Type.Optional(Type.String({ maxLength: 500, description: 'Why, for the audit trail' })),
});

export const ModelFallbacks = Type.Object({
  modelId: Type.String(),
  slug: Type.String(),
  fallbacks: Type.Array(Type.Object({ position: Type.Integer(), modelId: Type.String(), slug: Nullable(Type.String()) })),
});
