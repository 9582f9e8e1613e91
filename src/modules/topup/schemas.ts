import { Type } from 'typebox';
import { Nullable, Page, StrictObject, pageQuery } from '../../platform/http/schemas.js';

const Cents = Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER });
const Count = Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER });
const ComponentKind = Type.Union([Type.Literal('CREDITS'), Type.Literal('MODEL_USAGE')]);
const RuleType = Type.Union([Type.Literal('BONUS'), Type.Literal('PROMOTION')]);

export const RuleEffect = Type.Union(
  [
    Type.Object({ type: Type.Literal('BONUS_UNITS'), component: Type.String(), units: Count }),
    Type.Object({ type: Type.Literal('EXTRA_TOKENS_PERCENT'), percent: Count }),
    Type.Object({ type: Type.Literal('PERCENT_OFF'), percent: Count, maxDiscountCents: Type.Optional(Nullable(Cents)) }),
    Type.Object({ type: Type.Literal('FIXED_OFF'), amountCents: Cents }),
  ],
  { description: 'What a rule gives: bonus units of a component, extra tokens (percent), percent off (with a cap) or an amount off.' },
);

const ComponentPricingView = Type.Union([
  Type.Object({ mode: Type.Literal('formula'), unitPriceCents: Cents }),
  Type.Object({ mode: Type.Literal('tiers'), tiers: Type.Array(Type.Object({ minUnits: Count, unitPriceCents: Cents })) }),
]);

export const TopUpOptions = Type.Object({
  enabled: Type.Boolean(),
  currency: Type.String(),
  tokensPerCredit: Count,
  minOrderCents: Cents,
  maxOrderCents: Cents,
  roundToCents: Cents,
  charsPer300Tokens: Count,
  components: Type.Array(
    Type.Object({
      key: Type.String(),
      name: Type.String(),
      description: Type.String(),
      kind: ComponentKind,
      unit: Type.String(),
      minUnits: Count,
      maxUnits: Count,
      step: Count,
      defaultUnits: Count,
      tokensPerUnit: Count,
      pricing: ComponentPricingView,
    }),
  ),
  offers: Type.Array(
    Type.Object({
      id: Type.String(),
      name: Type.String(),
      description: Type.String(),
      type: RuleType,
      conditions: Type.Record(Type.String(), Type.Unknown(), {
        description:
          'minUnits, minSpendCents, daysOfWeek (Bangladesh time, 0 = Sunday), audience, newAccountDays, channels, startsAt, endsAt, maxUses, oncePerCustomer',
      }),
      effect: RuleEffect,
      endsAt: Nullable(Type.String({ format: 'date-time' })),
    }),
  ),
  channels: Type.Array(
    Type.Object({
      slug: Type.String(),
      name: Type.String(),
      enabled: Type.Boolean(),
      minAmountCents: Cents,
      maxAmountCents: Cents,
      amountsCents: Type.Array(Cents, { description: 'Registered amounts; empty means any.' }),
    }),
  ),
});

export const Selection = Type.Record(Type.String({ minLength: 1, maxLength: 64 }), Type.Number(), {
  maxProperties: 20,
  description: 'Component key to units; 0 omits a component. Values outside a component’s limits come back as quote issues.',
});

export const QuoteBody = StrictObject({
  selection: Selection,
  channel: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'The paying channel; enables channel-only promotions.' })),
});

const OfferRequirement = Type.Union([
  Type.Object({ type: Type.Literal('MIN_UNITS'), component: Type.String(), units: Count, missingUnits: Count }),
  Type.Object({ type: Type.Literal('MIN_SPEND'), amountCents: Cents, missingCents: Cents }),
  Type.Object({ type: Type.Literal('CHANNEL'), channels: Type.Array(Type.String()) }),
  Type.Object({ type: Type.Literal('SIGN_IN') }),
]);

export const TopUpQuote = Type.Object({
  valid: Type.Boolean(),
  issues: Type.Array(Type.Object({ field: Type.String({ description: 'A component key, `amount`, `selection` or `enabled`.' }), message: Type.String() })),
  currency: Type.String(),
  lines: Type.Array(
    Type.Object({
      key: Type.String(),
      name: Type.String(),
      kind: ComponentKind,
      unit: Type.String(),
      units: Count,
      tokensPerUnit: Count,
      tokens: Count,
      unitPriceCents: Cents,
      priceCents: Cents,
      tierMinUnits: Nullable(Count),
    }),
  ),
  subtotalCents: Cents,
  discountCents: Cents,
  amountCents: Cents,
  tokens: Count,
  bonusTokens: Count,
  totalTokens: Count,
  credits: Type.Number({ minimum: 0 }),
  bonusCredits: Type.Number({ minimum: 0 }),
  totalCredits: Type.Number({ minimum: 0 }),
  applied: Type.Array(Type.Object({ id: Type.String(), name: Type.String(), type: RuleType, effect: RuleEffect, discountCents: Cents, bonusTokens: Count })),
  offers: Type.Array(Type.Object({ id: Type.String(), name: Type.String(), type: RuleType, requirement: OfferRequirement })),
  payableWith: Type.Array(Type.String()),
  unavailableChannels: Type.Array(Type.Object({ slug: Type.String(), reason: Type.String() })),
  usage: Type.Object({
    items: Type.Array(Type.Object({ displayName: Type.String(), unit: Type.String(), units: Count })),
    tokensSpent: Count,
    tokensLeft: Count,
  }),
});

export const OrderBody = StrictObject({
  selection: Selection,
  provider: Type.String({ minLength: 1, maxLength: 64, description: 'The payment channel slug (GET /v1/payments/channels).' }),
  extra: Type.Optional(
    Type.Record(Type.String({ maxLength: 64 }), Type.String({ maxLength: 256 }), {
      maxProperties: 10,
      description: 'The channel’s required fields; carrier billing: msisdn and paymentProvider.',
    }),
  ),
  expectedAmountCents: Type.Optional(Cents),
  couponCode: Type.Optional(Type.String({ maxLength: 64, description: 'Not accepted: top-ups take no coupon (400).' })),
  successUrl: Type.Optional(Type.String({ format: 'uri', maxLength: 2048 })),
  cancelUrl: Type.Optional(Type.String({ format: 'uri', maxLength: 2048 })),
});

export const OrderPlaced = Type.Object({
  orderId: Type.String(),
  paymentId: Type.String(),
  redirectUrl: Type.String(),
  amountCents: Cents,
  tokens: Count,
  bonusTokens: Count,
  totalTokens: Count,
});

export const TopUpOrder = Type.Object({
  id: Type.String(),
  status: Type.String({ description: 'The payment’s status: PENDING, SUCCEEDED, FAILED, CANCELLED, EXPIRED or REFUNDED.' }),
  selection: Type.Record(Type.String(), Count),
  lines: TopUpQuote.properties.lines,
  appliedRules: TopUpQuote.properties.applied,
  subtotalCents: Cents,
  discountCents: Cents,
  amountCents: Cents,
  currency: Type.String(),
  tokens: Count,
  bonusTokens: Count,
  totalTokens: Count,
  channel: Type.String(),
  payment: Nullable(Type.Object({ id: Type.String(), status: Type.String(), provider: Type.String(), paidAt: Nullable(Type.String({ format: 'date-time' })) })),
  tokensGranted: Count,
  createdAt: Type.String({ format: 'date-time' }),
});

export const OrderParams = StrictObject({ id: Type.String({ format: 'uuid' }) });
export const OrdersQuery = StrictObject(pageQuery(20, 50));
export const OrdersPage = Page(TopUpOrder);
