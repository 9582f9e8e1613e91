import { Type } from 'typebox';
import { DateTime, Nullable, StrictObject } from '../../platform/http/schemas.js';

const State = Type.Enum(['ACTIVE', 'SCHEDULED', 'EXPIRED', 'EXHAUSTED', 'INACTIVE'], {
  description: 'What a customer meets now: ACTIVE usable; SCHEDULED not started; EXPIRED past its end; EXHAUSTED fully redeemed; INACTIVE switched off',
});

export const CouponIdParams = StrictObject({ id: Type.String({ format: 'uuid' }) });

export const CouponsQuery = StrictObject({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 50, description: '1-100, default 50' })),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 512, description: 'The nextCursor of the previous page' })),
  state: Type.Optional(State),
  code: Type.Optional(Type.String({ minLength: 1, maxLength: 40, description: 'Exact code (case-insensitive)' })),
});

export const AdminCoupon = Type.Object({
  id: Type.String(),
  code: Type.String(),
  description: Type.String(),
  appliesTo: Type.Enum(['PLAN', 'TOPUP']),
  planIds: Type.Array(Type.String(), { description: 'Plans the code is limited to; empty: every plan' }),
  discountType: Type.Enum(['PERCENT', 'FIXED']),
  percentOff: Nullable(Type.Integer()),
  amountOffCents: Nullable(Type.Integer()),
  currency: Nullable(Type.String()),
  minOrderCents: Type.Integer(),
  startsAt: Nullable(DateTime),
  endsAt: Nullable(DateTime),
  maxRedemptions: Nullable(Type.Integer()),
  redeemedCount: Type.Integer({ description: 'Uses reserved at checkout or redeemed' }),
  state: State,
  createdAt: DateTime,
  updatedAt: DateTime,
});

export const AdminCouponPage = Type.Object({ items: Type.Array(AdminCoupon), nextCursor: Nullable(Type.String()) });

export const CreateCouponBody = StrictObject({
  code: Type.String({
    minLength: 3,
    maxLength: 40,
    pattern: '^[A-Za-z0-9][A-Za-z0-9_-]{2,39}$',
    description: '3-40 letters, digits, "-" or "_"; stored upper-case',
  }),
  description: Type.Optional(Type.String({ maxLength: 500 })),
  planIds: Type.Optional(Type.Array(Type.String({ format: 'uuid' }), { maxItems: 100, uniqueItems: true })),
  discountType: Type.Enum(['PERCENT', 'FIXED']),
  percentOff: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'PERCENT: 1-100' })),
  amountOffCents: Type.Optional(Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'FIXED: minor units of currency' })),
  currency: Type.Optional(Type.String({ pattern: '^[A-Za-z]{3}$', description: 'FIXED: ISO 4217' })),
  minOrderCents: Type.Optional(Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })),
  startsAt: Type.Optional(Nullable(DateTime)),
  endsAt: Type.Optional(Nullable(DateTime)),
  maxRedemptions: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 100_000_000 }))),
});

export const ExpireCouponBody = StrictObject({ reason: Type.Optional(Type.String({ minLength: 1, maxLength: 500, description: 'Kept in the audit trail' })) });
