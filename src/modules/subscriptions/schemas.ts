import { Type, type Static } from 'typebox';
import { DateTime, Nullable, StrictObject } from '../../platform/http/schemas.js';

const PlanId = Type.String({ minLength: 1, maxLength: 64, description: 'A plan id from GET /v1/plans (not its slug)' });
const Money = (description: string) => Type.Integer({ minimum: 0, description: `${description} (minor units)` });

export const Subscription = Type.Object({
  id: Type.String(),
  status: Type.Enum(['PENDING', 'TRIALING', 'ACTIVE', 'PAST_DUE', 'GRACE', 'CANCELED', 'EXPIRED']),
  startsAt: DateTime,
  endsAt: Nullable(DateTime),
  autoRenew: Type.Boolean(),
  nextPlanId: Nullable(Type.String()),
  planId: Type.String(),
  usage: Type.Object({
    tokensUsed: Type.Integer(),
    storageMbUsed: Type.Number(),
    imageCreditsUsed: Type.Integer(),
    videoCreditsUsed: Type.Integer(),
    dailyRequestsUsed: Type.Integer(),
    monthlyRequestsUsed: Type.Integer(),
  }),
  plan: Type.Object({ slug: Type.String(), name: Type.String(), interval: Type.String(), priceCents: Type.Integer(), currency: Type.String() }),
  graceEndsAt: Nullable(DateTime),
  pendingChange: Nullable(
    Type.Object({
      id: Type.String(),
      kind: Type.Enum(['upgrade', 'downgrade', 'renewal']),
      planId: Type.String(),
      amountDueCents: Type.Integer(),
      paid: Type.Boolean({ description: 'A paid change can no longer be cancelled by the customer' }),
      paymentId: Nullable(Type.String()),
      effectiveAt: Nullable(DateTime),
    }),
  ),
  workspaceId: Type.Optional(Type.String()),
});

export const SubscriptionList = Type.Array(Subscription, { description: 'Newest first' });

export const TrialBody = StrictObject({ planId: PlanId });

/** `recurring` as the spec accepts it: 1, 0, true, false, 'true', 'false'. */
export const Recurring = Type.Union([Type.Boolean(), Type.Literal(1), Type.Literal(0), Type.Literal('true'), Type.Literal('false')], {
  description: 'Ask the channel to renew automatically; omitted means one-off',
});
export const parseRecurring = (value: Static<typeof Recurring> | undefined): boolean | undefined =>
  value === undefined ? undefined : value === true || value === 1 || value === 'true';

export const SwitchBody = StrictObject({
  planId: PlanId,
  provider: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Payment channel slug; needed when there is something to pay' })),
  recurring: Type.Optional(Recurring),
  extra: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: "The channel's required fields" })),
  couponCode: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  successUrl: Type.Optional(Type.String({ format: 'uri', maxLength: 2048 })),
  cancelUrl: Type.Optional(Type.String({ format: 'uri', maxLength: 2048 })),
});

export const SwitchQuoteQuery = StrictObject({ planId: PlanId });

export const SwitchQuote = Type.Object({
  kind: Type.Enum(['upgrade', 'downgrade']),
  planPriceCents: Money('Price of the new plan'),
  unusedCreditCents: Money('Unused part of the paid cycle, credited off the price (upgrades)'),
  amountDueCents: Money('What the switch costs now'),
  requiresPayment: Type.Boolean(),
  effectiveAt: DateTime,
  currency: Type.String(),
  planId: Type.String(),
});

export const SwitchResponse = Type.Object(
  {
    kind: Type.Enum(['upgrade', 'downgrade']),
    planId: Type.String(),
    subscriptionId: Type.String({ description: 'The subscription that carries (or will carry) the new plan' }),
    changeId: Nullable(Type.String()),
    paymentId: Nullable(Type.String()),
    redirectUrl: Type.Optional(Type.String({ description: 'Payment needed: send the customer here (or, with settled, the success page)' })),
    recurring: Type.Boolean(),
    scheduled: Type.Boolean(),
    switched: Type.Boolean(),
    settled: Type.Boolean({ description: 'A coupon covered the whole price; already fulfilled' }),
    effectiveAt: Nullable(DateTime),
    amountDueCents: Money('Charged for this switch'),
    discountCents: Money('Taken off by the coupon'),
    currency: Type.String(),
  },
  {
    description:
      'Branch on the response: redirectUrl → pay there; switched → done; scheduled without redirectUrl → starts at effectiveAt; settled → coupon covered it',
  },
);

export const ScheduledSwitchCanceled = Type.Object({ ok: Type.Literal(true), subscriptionId: Type.String() });

export const CouponPreviewBody = StrictObject({ code: Type.String({ minLength: 1, maxLength: 64 }), planId: PlanId });

export const CouponPreview = Type.Object({
  couponId: Type.Optional(Type.String()),
  code: Type.Optional(Type.String()),
  originalCents: Type.Optional(Money('What the plan costs the caller now')),
  discountCents: Money('Taken off by the code'),
  finalCents: Money('What would be charged'),
  currency: Type.Optional(Type.String()),
});
