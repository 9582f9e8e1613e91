import { Type } from 'typebox';
import { DateTime, Nullable, Page, StrictObject, pageQuery } from '../../platform/http/schemas.js';
import { TopUpOrder } from './schemas.js';

const Cents = Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER });
const PositiveCents = Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER });
const PositiveCount = Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER });
const Bp = (description: string) => Type.Integer({ minimum: 0, maximum: 10_000, description: `${description} (basis points: 100 = 1%)` });
const Key = Type.String({ minLength: 1, maxLength: 64, pattern: '^[a-z][a-z0-9_-]*$' });
const Percent = Type.Integer({ minimum: 1, maximum: 100 });
const RuleType = Type.Union([Type.Literal('BONUS'), Type.Literal('PROMOTION')]);

/**
 * A rule's effect as operators write it: one object whose `type` says which fields it needs (checked with a message
 * naming the missing field): BONUS_UNITS `component` + `units`; EXTRA_TOKENS_PERCENT `percent`; PERCENT_OFF `percent`
 * (+ optional `maxDiscountCents`); FIXED_OFF `amountCents`.
 */
export const RuleEffectInput = StrictObject(
  {
    type: Type.Union([Type.Literal('BONUS_UNITS'), Type.Literal('EXTRA_TOKENS_PERCENT'), Type.Literal('PERCENT_OFF'), Type.Literal('FIXED_OFF')]),
    component: Type.Optional(Key),
    units: Type.Optional(PositiveCount),
    percent: Type.Optional(Percent),
    maxDiscountCents: Type.Optional(Nullable(PositiveCents)),
    amountCents: Type.Optional(PositiveCents),
  },
  {
    description:
      'BONUS_UNITS (component, units), EXTRA_TOKENS_PERCENT (percent of the bought tokens), PERCENT_OFF (percent, optional maxDiscountCents) or FIXED_OFF (amountCents).',
  },
);

export const RuleConditionsInput = StrictObject(
  {
    minUnits: Type.Optional(Nullable(StrictObject({ component: Key, units: PositiveCount }))),
    minSpendCents: Type.Optional(Nullable(PositiveCents)),
    daysOfWeek: Type.Optional(
      Nullable(
        Type.Array(Type.Integer({ minimum: 0, maximum: 6 }), { minItems: 1, maxItems: 7, uniqueItems: true, description: 'Bangladesh time, 0 = Sunday' }),
      ),
    ),
    audience: Type.Optional(Nullable(Type.Union([Type.Literal('EVERYONE'), Type.Literal('FIRST_TOPUP'), Type.Literal('NEW_ACCOUNT')]))),
    newAccountDays: Type.Optional(
      Nullable(Type.Integer({ minimum: 1, maximum: 3650, description: 'With audience NEW_ACCOUNT: accounts younger than this many days' })),
    ),
    channels: Type.Optional(Nullable(Type.Array(Key, { minItems: 1, maxItems: 20, uniqueItems: true, description: 'Paying channel slugs' }))),
    startsAt: Type.Optional(Nullable(DateTime)),
    endsAt: Type.Optional(Nullable(DateTime)),
    maxUses: Type.Optional(Nullable(PositiveCount)),
    oncePerCustomer: Type.Optional(Nullable(Type.Boolean())),
  },
  { description: 'Every condition given must hold; omitted or null conditions do not apply.' },
);

export const RuleInput = StrictObject(
  {
    name: Type.String({ minLength: 1, maxLength: 120 }),
    description: Type.Optional(Type.String({ maxLength: 500 })),
    type: RuleType,
    priority: Type.Optional(
      Type.Integer({ minimum: -1_000_000, maximum: 1_000_000, description: 'Higher wins in its group and is dropped last for the profit floor; default 0' }),
    ),
    group: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 64, description: 'Rules of one group do not stack; null stacks' }))),
    effect: RuleEffectInput,
    conditions: Type.Optional(RuleConditionsInput),
  },
  { description: 'A rule’s definition. New rules start switched off; switch them with PATCH /v1/admin/topup/rules/{id}.' },
);

export const RuleActiveBody = StrictObject({ active: Type.Boolean({ description: 'Switches the rule on or off' }) });
export const RuleParams = StrictObject({ id: Type.String({ format: 'uuid' }) });

export const AdminRule = Type.Object({
  id: Type.String(),
  template: Nullable(Type.String({ description: 'The seeded template this rule is (null for an operator’s own)' })),
  name: Type.String(),
  description: Type.String(),
  type: RuleType,
  active: Type.Boolean(),
  priority: Type.Integer(),
  group: Nullable(Type.String()),
  effect: Type.Record(Type.String(), Type.Unknown()),
  conditions: Type.Record(Type.String(), Type.Unknown()),
  createdAt: DateTime,
  updatedAt: DateTime,
});
export const AdminRuleList = Type.Object({ items: Type.Array(AdminRule) });

const Tier = StrictObject({ minUnits: PositiveCount, unitPriceCents: PositiveCents });
export const ComponentPricingInput = Type.Union(
  [
    StrictObject({ mode: Type.Literal('AI_COST') }),
    StrictObject({ mode: Type.Literal('FIXED'), unitPriceCents: PositiveCents }),
    StrictObject({
      mode: Type.Literal('TIERS'),
      tiers: Type.Array(Tier, { minItems: 1, maxItems: 20, description: 'Ascending by minUnits; every unit costs the highest tier reached' }),
    }),
  ],
  { description: 'From AI cost (the settings’ price basis), a fixed price per unit, or volume tiers.' },
);

export const ComponentPatch = StrictObject(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 120 })),
    description: Type.Optional(Type.String({ maxLength: 500 })),
    enabled: Type.Optional(Type.Boolean({ description: 'On sale in the builder' })),
    minUnits: Type.Optional(PositiveCount),
    maxUnits: Type.Optional(PositiveCount),
    step: Type.Optional(PositiveCount),
    defaultUnits: Type.Optional(PositiveCount),
    tokensPerUnit: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 1_000_000_000_000, description: 'Model-usage bundles only (credits use tokensPerCredit)' }),
    ),
    pricing: Type.Optional(ComponentPricingInput),
  },
  { minProperties: 1 },
);
export const ComponentParams = StrictObject({ key: Key });

export const AdminComponent = Type.Object({
  key: Type.String(),
  name: Type.String(),
  description: Type.String(),
  kind: Type.Union([Type.Literal('CREDITS'), Type.Literal('MODEL_USAGE')]),
  unit: Type.String(),
  enabled: Type.Boolean(),
  minUnits: Type.Integer(),
  maxUnits: Type.Integer(),
  step: Type.Integer(),
  defaultUnits: Type.Integer(),
  tokensPerUnit: Nullable(Type.Integer({ description: 'null for credits (tokensPerCredit of the credit pricing)' })),
  pricing: Type.Record(Type.String(), Type.Unknown()),
  updatedAt: DateTime,
});
export const AdminComponentList = Type.Object({ items: Type.Array(AdminComponent) });

const settingsFields = {
  roundToCents: PositiveCount,
  minOrderCents: PositiveCents,
  maxOrderCents: PositiveCents,
  profitFloorBp: Bp('The least profit a quote keeps if every token is used'),
  maxDiscountBp: Bp('The largest total discount, of the price before discounts'),
  gatewayFeeBp: Bp('Sell price basis: the gateway fee share'),
  vatBp: Bp('Sell price basis: the VAT share'),
  profitBp: Bp('Sell price basis: the profit share'),
  charsPer300Tokens: PositiveCount,
  lowBalanceThresholdTokens: Type.Integer({
    minimum: 0,
    maximum: Number.MAX_SAFE_INTEGER,
    description: 'QUOTA_WARNING when a charge takes a wallet under this; 0 switches the warning off',
  }),
};
export const TopUpSettings = Type.Object({ ...settingsFields, updatedAt: DateTime });
export const TopUpSettingsBody = Type.Partial(StrictObject(settingsFields), {
  additionalProperties: false,
  minProperties: 1,
  description: 'The settings to change; keys left out keep their value.',
});

export const CarrierAmounts = Type.Object({ amountsCents: Type.Array(Cents) });
export const CarrierAmountsBody = StrictObject({
  amountsCents: Type.Array(PositiveCents, {
    maxItems: 50,
    uniqueItems: true,
    description: 'Positive minor units, ascending, no repeats; empty: carrier billing is not offered for top-ups',
  }),
});

export const CreditPricing = Type.Object({
  tokenValueCents: PositiveCents,
  tokenValueTokens: PositiveCents,
  tokensPerCredit: PositiveCents,
  currency: Type.String(),
  topUpEnabled: Type.Boolean(),
});
export const CreditPricingBody = StrictObject(
  {
    tokenValueCents: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 1_000_000_000, description: 'Minor units of provider cost that tokenValueTokens tokens stand for' }),
    ),
    tokenValueTokens: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000_000_000 })),
    tokensPerCredit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000_000 })),
    topUpEnabled: Type.Optional(Type.Boolean({ description: 'The top-up builder’s master switch' })),
  },
  { minProperties: 1, description: 'The fields to change; fields left out keep their value.' },
);

export const AdminOrdersQuery = StrictObject({
  ...pageQuery(20, 100),
  status: Type.Optional(Type.Union(['PENDING', 'SUCCEEDED', 'FAILED', 'CANCELLED', 'EXPIRED', 'REFUNDED'].map((s) => Type.Literal(s)))),
  userId: Type.Optional(Type.String({ format: 'uuid' })),
});
export const AdminOrder = Type.Object({ ...TopUpOrder.properties, userId: Type.String() });
export const AdminOrdersPage = Page(AdminOrder);
