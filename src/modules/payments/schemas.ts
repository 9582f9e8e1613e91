import { Type } from 'typebox';
import { DateTime, Nullable, StrictObject } from '../../platform/http/schemas.js';

const Money = (description: string) => Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: `${description} (minor units, 64-bit)` });
const Tokens = (description: string) => Type.Integer({ minimum: 0, description });
const ReturnUrl = (description: string) => Type.String({ format: 'uri', pattern: '^https?://', maxLength: 2048, description });

export const Recurring = Type.Union([Type.Boolean(), Type.Literal(1), Type.Literal(0), Type.Literal('true'), Type.Literal('false')], {
  description: 'Ask the channel to renew automatically (channels with supportsRecurring); omitted means one-off',
});

export const ChannelList = Type.Array(
  Type.Object({
    slug: Type.String(),
    name: Type.String(),
    autoRenews: Type.Boolean(),
    supportsRecurring: Type.Optional(Type.Boolean()),
    recurringDefault: Type.Optional(Type.Boolean()),
    requiredFields: Type.Array(
      Type.Object({
        name: Type.String(),
        label: Type.String(),
        type: Type.String({ description: 'tel, select or text' }),
        optional: Type.Optional(Type.Boolean()),
        options: Type.Optional(Type.Array(Type.Object({ value: Type.String(), label: Type.String(), needsPin: Type.Boolean() }))),
      }),
    ),
  }),
  { description: 'Channels that can take payments now (disabled or misconfigured ones are withheld)' },
);

export const CheckoutBody = StrictObject({
  planId: Type.String({ minLength: 1, maxLength: 64, description: 'A plan id from GET /v1/plans' }),
  provider: Type.String({ minLength: 1, maxLength: 64, description: 'A channel slug from GET /v1/payments/channels' }),
  successUrl: ReturnUrl('Where the customer lands after paying (not proof of payment: poll afterwards)'),
  cancelUrl: ReturnUrl('Where the customer lands after backing out or a failure'),
  extra: Type.Optional(
    Type.Record(Type.String({ maxLength: 64 }), Type.Union([Type.String({ maxLength: 256 }), Type.Number()]), {
      description: "The channel's requiredFields",
      maxProperties: 20,
    }),
  ),
  recurring: Type.Optional(Recurring),
  couponCode: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
});

export const CheckoutResponse = Type.Object(
  {
    paymentId: Nullable(Type.String()),
    redirectUrl: Type.Optional(Type.String({ description: 'Payment needed: send the customer here (or, with settled, the success page)' })),
    kind: Type.Enum(['upgrade', 'downgrade']),
    planId: Type.String(),
    subscriptionId: Type.String(),
    changeId: Nullable(Type.String()),
    recurring: Type.Boolean(),
    scheduled: Type.Boolean(),
    switched: Type.Boolean(),
    settled: Type.Boolean(),
    effectiveAt: Nullable(DateTime),
    amountDueCents: Money('Charged'),
    discountCents: Money('Taken off by the coupon'),
    currency: Type.String(),
  },
  {
    description:
      'Branch on the response: redirectUrl → pay there; switched → done; scheduled without redirectUrl → starts at effectiveAt; settled → coupon covered it',
  },
);

export const Payment = Type.Object({
  id: Type.String(),
  status: Type.Enum(['PENDING', 'SUCCEEDED', 'FAILED', 'CANCELLED', 'EXPIRED', 'REFUNDED']),
  kind: Type.String({ description: 'plan or topup' }),
  topUpOrderId: Nullable(Type.String()),
  subscriptionId: Nullable(Type.String()),
  tokensGranted: Tokens('Tokens this payment added to the wallet'),
  amountCents: Money('Amount charged'),
  currency: Type.String(),
  provider: Type.String(),
  recurring: Type.Boolean(),
  fulfilment: Type.Enum(['NONE', 'FULFILLED', 'REVIEW'], { description: 'REVIEW: paid but not fulfilled (e.g. another amount); support follows up' }),
  reviewReason: Nullable(Type.String()),
  paidAt: Nullable(DateTime),
  refundedAt: Nullable(DateTime),
  tokensTakenBack: Tokens('Tokens a refund took back'),
  tokensUnrecovered: Tokens('Tokens a refund could not take back (already spent)'),
  expiresAt: DateTime,
  createdAt: DateTime,
});

export const PaymentParams = StrictObject({ id: Type.String({ minLength: 1, maxLength: 64 }) });
export const ProviderParams = StrictObject({ provider: Type.String({ minLength: 1, maxLength: 64 }) });

export const VerifyPinBody = StrictObject({
  paymentId: Type.String({ minLength: 1, maxLength: 64 }),
  pinCode: Type.String({ pattern: '^[0-9]{5}$', description: 'The 5-digit PIN the carrier texted' }),
});

export const VerifyPinResponse = Type.Object({
  ok: Type.Literal(true),
  paymentId: Type.String(),
  message: Type.String(),
  subscriptionStatus: Type.String({ description: 'Best effort; may still read PENDING until the carrier calls back' }),
});

export const AgreementList = Type.Object({
  items: Type.Array(
    Type.Object({
      id: Type.String(),
      channel: Type.String(),
      label: Type.String(),
      status: Type.Enum(['ACTIVE', 'CANCELLED']),
      subscriptionId: Nullable(Type.String()),
      createdAt: DateTime,
      cancelledAt: Nullable(DateTime),
    }),
  ),
});

export const AgreementCancelled = Type.Object({ ok: Type.Literal(true), id: Type.String(), status: Type.Literal('CANCELLED') });
export const RecurringCancelled = Type.Object({
  ok: Type.Literal(true),
  subscriptionId: Type.String(),
  status: Type.String(),
  endsAt: Nullable(Type.String()),
});

export const WebhookAck = Type.Object({ received: Type.Literal(true), applied: Type.String() });
const QueryField = Type.Optional(Type.String({ maxLength: 256 }));
export const WebhookQuery = Type.Object(
  { order_tracking_id: QueryField, status: QueryField, amount: QueryField, msisdn: QueryField, transaction_id: QueryField },
  { additionalProperties: true, description: "The carrier's callback fields (gateways may add their own)" },
);

export const ReturnQuery = Type.Object(
  { result: Type.Optional(Type.Enum(['success', 'cancel', 'fail'])), paymentID: QueryField, status: QueryField },
  { additionalProperties: true, description: 'Our result, plus what the gateway appends (e.g. paymentID and status)' },
);
export const SandboxQuery = StrictObject({ t: Type.String({ minLength: 1, maxLength: 64 }) });
export const SandboxForm = StrictObject({
  t: Type.String({ minLength: 1, maxLength: 64 }),
  action: Type.Enum(['pay', 'cancel', 'fail']),
  pin: Type.Optional(Type.String({ maxLength: 5 })),
});
export const Html = Type.String({ description: 'An HTML page' });
export const EmptyQuery = StrictObject({});
