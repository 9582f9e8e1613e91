import { Type } from 'typebox';
import { Nullable, StrictObject } from '../../platform/http/schemas.js';

const ModelAccessItem = Type.Object({
  id: Type.String(),
  slug: Type.String(),
  displayName: Type.String(),
  provider: Type.Object({ slug: Type.String(), name: Type.String() }),
  unit: Nullable(Type.String({ description: 'The unit the model is mainly billed by (a /v1/credits/rates key)' })),
  tokensPerUnit: Nullable(Type.Integer()),
});

export const ModelAccessGroup = Type.Object({
  kind: Type.String(),
  count: Type.Integer({ description: 'Equals the length of `models`' }),
  models: Type.Array(ModelAccessItem),
});

export const Plan = Type.Object({
  id: Type.String(),
  slug: Type.String(),
  name: Type.String(),
  description: Type.String(),
  interval: Type.Enum(['DAILY', 'WEEKLY', 'MONTHLY', 'YEARLY', 'ENTERPRISE']),
  priceCents: Type.Integer(),
  currency: Type.String(),
  trialDays: Type.Integer(),
  tokenAllowance: Type.Integer({ description: 'Tokens added to the wallet each cycle' }),
  sortOrder: Type.Integer(),
  limits: Type.Record(Type.String(), Type.Unknown()),
  features: Type.Object(
    { signupDefault: Type.Boolean(), apiAccess: Type.Boolean(), modelAccess: Type.Array(ModelAccessGroup) },
    { additionalProperties: true },
  ),
  allowedModelIds: Type.Array(Type.String()),
  servableModelIds: Type.Array(Type.String()),
  allowedChannels: Type.Array(Type.String()),
  payableWith: Type.Array(Type.String()),
});

export const PlanList = Type.Object({ items: Type.Array(Plan) });
export const SlugParams = StrictObject({ slug: Type.String({ minLength: 1, maxLength: 100 }) });
export const EmptyQuery = StrictObject({});

export const PlanModels = Type.Object({
  plan: Type.Object({ id: Type.String(), slug: Type.String(), name: Type.String() }),
  tokensPerCredit: Type.Integer(),
  groups: Type.Array(ModelAccessGroup),
});
