import { Type } from 'typebox';
import { Nullable, StrictObject } from '../../platform/http/schemas.js';

export const ANALYTICS_MAX_DAYS = 366;

const Day = Type.String({ format: 'date', description: 'A UTC day, YYYY-MM-DD' });

export const RangeQuery = StrictObject({
  from: Type.Optional({ ...Day, description: 'First UTC day, inclusive (default: 29 days before `to`)' }),
  to: Type.Optional({ ...Day, description: `Last UTC day, inclusive (default: today); at most ${ANALYTICS_MAX_DAYS} days after from` }),
});

const Range = {
  from: Day,
  to: Day,
  excludedPlaygroundIdentity: Type.Boolean({ description: "true when the playground's internal identity exists and its records were left out" }),
};

export const RevenueReport = Type.Object({
  ...Range,
  rows: Type.Array(
    Type.Object({
      day: Day,
      channel: Type.String(),
      currency: Type.String(),
      kind: Type.String({ description: 'SUBSCRIPTION (plans) or TOPUP (token top-ups)' }),
      payments: Type.Integer(),
      amountCents: Type.Integer({ description: 'Minor units of the currency' }),
    }),
  ),
  totals: Type.Array(Type.Object({ currency: Type.String(), kind: Type.String(), payments: Type.Integer(), amountCents: Type.Integer() })),
});

export const UsageReport = Type.Object({
  ...Range,
  rows: Type.Array(
    Type.Object({
      day: Day,
      provider: Nullable(Type.String({ description: 'Provider slug' })),
      model: Nullable(Type.String({ description: 'Model slug' })),
      calls: Type.Integer(),
      failedCalls: Type.Integer(),
      tokens: Type.Integer({ description: 'Tokens charged to wallets' }),
      providerCostCents: Type.Integer(),
    }),
  ),
  totals: Type.Object({ calls: Type.Integer(), failedCalls: Type.Integer(), tokens: Type.Integer(), providerCostCents: Type.Integer() }),
});
