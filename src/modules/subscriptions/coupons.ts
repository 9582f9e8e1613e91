import { and, eq, gt, lt, lte, isNull, ne, or, sql, type SQL } from 'drizzle-orm';
import { couponRedemptions, coupons } from '../../db/schema/coupons.js';
import type { Clock } from '../../platform/clock/clock.js';
import type { Db, DbOrTx } from '../../platform/db/database.js';
import { badRequest, conflict, notFound } from '../../platform/http/errors.js';
import { newestFirstPage } from '../../platform/http/pagination.js';
import type { AuditWriter } from '../audit/service.js';
import { formatMoney, toSafeCents } from './money.js';

export type CouponRow = typeof coupons.$inferSelect;

export const COUPON_CODE = /^[A-Z0-9][A-Z0-9_-]{2,39}$/;
export const normalizeCode = (code: string) => code.trim().toUpperCase();

export interface NewCoupon {
  code: string;
  description?: string;
  appliesTo?: 'PLAN' | 'TOPUP';
  planIds?: string[];
  discountType: 'PERCENT' | 'FIXED';
  percentOff?: number;
  amountOffCents?: number;
  currency?: string;
  minOrderCents?: number;
  startsAt?: Date | null;
  endsAt?: Date | null;
  maxRedemptions?: number | null;
}

/** What a code takes off one order; the order is always priced by the server. */
export interface CouponOrder {
  userId: string;
  planId: string;
  planName: string;
  amountCents: number;
  currency: string;
  recurring: boolean;
}

export interface CouponDiscount {
  coupon: CouponRow;
  discountCents: number;
}

type RefusalReason =
  | 'UNKNOWN'
  | 'INACTIVE'
  | 'NOT_STARTED'
  | 'EXPIRED'
  | 'FULLY_REDEEMED'
  | 'ALREADY_USED'
  | 'BELOW_MINIMUM'
  | 'OTHER_PURCHASE_KIND'
  | 'OTHER_PLAN'
  | 'CURRENCY'
  | 'RECURRING'
  | 'NOTHING_TO_PAY';

export type CouponState = 'ACTIVE' | 'SCHEDULED' | 'EXPIRED' | 'EXHAUSTED' | 'INACTIVE';

function stateOf(row: CouponRow, now: Date): CouponState {
  if (!row.active) return 'INACTIVE';
  if (row.endsAt && row.endsAt <= now) return 'EXPIRED';
  if (row.startsAt && row.startsAt > now) return 'SCHEDULED';
  if (row.maxRedemptions !== null && row.redeemedCount >= row.maxRedemptions) return 'EXHAUSTED';
  return 'ACTIVE';
}

/** A coupon as operators see it, with the state a customer would meet now. */
export const couponView = (row: CouponRow, now: Date) => ({
  id: row.id,
  code: row.code,
  description: row.description,
  appliesTo: row.appliesTo,
  planIds: row.planIds,
  discountType: row.discountType,
  percentOff: row.percentOff,
  amountOffCents: row.amountOffCents,
  currency: row.currency,
  minOrderCents: row.minOrderCents,
  startsAt: row.startsAt?.toISOString() ?? null,
  endsAt: row.endsAt?.toISOString() ?? null,
  maxRedemptions: row.maxRedemptions,
  redeemedCount: row.redeemedCount,
  state: stateOf(row, now),
  createdAt: row.createdAt.toISOString(),
  updatedAt: row.updatedAt.toISOString(),
});

const refuse = (code: string, reason: RefusalReason, message: string) => badRequest(message, { couponCode: code, reason });
const day = (d: Date) => d.toISOString().slice(0, 10);

/** Coupons: checked and priced here, reserved at checkout (so limits hold), redeemed when paid, released when abandoned. */
export function createCouponsService(deps: { db: Db; clock: Clock }) {
  const { db, clock } = deps;

  async function byCode(dbOrTx: DbOrTx, code: string): Promise<CouponRow | undefined> {
    const [row] = await dbOrTx.select().from(coupons).where(eq(coupons.code, code));
    return row;
  }

  function discountOf(coupon: CouponRow, amountCents: number): number {
    if (coupon.discountType === 'PERCENT') return toSafeCents((BigInt(amountCents) * BigInt(coupon.percentOff ?? 0)) / 100n);
    return Math.min(coupon.amountOffCents ?? 0, amountCents);
  }

  /** Every refusal of the spec, as a 400 a person can act on; otherwise the discount. Reserves nothing. */
  async function evaluate(dbOrTx: DbOrTx, rawCode: string, order: CouponOrder): Promise<CouponDiscount> {
    const code = normalizeCode(rawCode);
    const coupon = COUPON_CODE.test(code) ? await byCode(dbOrTx, code) : undefined;
    const now = clock.now();
    if (!coupon) throw refuse(code, 'UNKNOWN', `The code "${code}" does not exist. Check the spelling.`);
    if (!coupon.active) throw refuse(code, 'INACTIVE', `The code ${code} is no longer available.`);
    if (coupon.appliesTo !== 'PLAN') throw refuse(code, 'OTHER_PURCHASE_KIND', `The code ${code} is for top-ups, not plans; top-ups take no code.`);
    if (coupon.planIds.length > 0 && !coupon.planIds.includes(order.planId)) {
      throw refuse(code, 'OTHER_PLAN', `The code ${code} does not apply to the ${order.planName} plan.`);
    }
    if (coupon.startsAt && coupon.startsAt > now) throw refuse(code, 'NOT_STARTED', `The code ${code} can be used from ${day(coupon.startsAt)}.`);
    if (coupon.endsAt && coupon.endsAt <= now) throw refuse(code, 'EXPIRED', `The code ${code} expired on ${day(coupon.endsAt)}.`);
    if (order.recurring) {
      throw refuse(
        code,
        'RECURRING',
        `Codes cannot be used with automatic renewal. Send recurring: false (or choose a channel that does not renew by itself) to use ${code}.`,
      );
    }
    if (order.amountCents === 0) throw refuse(code, 'NOTHING_TO_PAY', `There is nothing to pay for this change, so no code is needed.`);
    if (coupon.maxRedemptions !== null && coupon.redeemedCount >= coupon.maxRedemptions) {
      throw refuse(code, 'FULLY_REDEEMED', `The code ${code} has been fully redeemed.`);
    }
    const [used] = await dbOrTx
      .select({ id: couponRedemptions.id })
      .from(couponRedemptions)
      .where(and(eq(couponRedemptions.couponId, coupon.id), eq(couponRedemptions.userId, order.userId), ne(couponRedemptions.status, 'RELEASED')));
    if (used) throw refuse(code, 'ALREADY_USED', `You have already used the code ${code}.`);
    if (order.amountCents < coupon.minOrderCents) {
      throw refuse(
        code,
        'BELOW_MINIMUM',
        `The code ${code} needs an order of at least ${formatMoney(coupon.minOrderCents, order.currency)}; this one is ${formatMoney(order.amountCents, order.currency)}.`,
      );
    }
    if (coupon.discountType === 'FIXED' && coupon.currency !== order.currency) {
      throw refuse(code, 'CURRENCY', `The code ${code} is in ${coupon.currency} and cannot be used on a ${order.currency} price.`);
    }
    return { coupon, discountCents: discountOf(coupon, order.amountCents) };
  }

  return {
    evaluate,

    /** Creates a coupon; an operator's creation is audited in the same transaction (`audit`). */
    async create(input: NewCoupon, audit?: AuditWriter): Promise<CouponRow> {
      const code = normalizeCode(input.code);
      if (!COUPON_CODE.test(code)) throw badRequest('A code is 3-40 letters, digits, "-" or "_".', { field: 'code' });
      if (input.discountType === 'PERCENT' && !(Number.isInteger(input.percentOff) && input.percentOff! >= 1 && input.percentOff! <= 100)) {
        throw badRequest('percentOff must be a whole number from 1 to 100.', { field: 'percentOff' });
      }
      if (input.discountType === 'FIXED' && !(Number.isSafeInteger(input.amountOffCents) && input.amountOffCents! > 0 && input.currency)) {
        throw badRequest('A fixed discount needs a positive amountOffCents (minor units) and its currency.', { field: 'amountOffCents' });
      }
      if (input.maxRedemptions != null && !(Number.isInteger(input.maxRedemptions) && input.maxRedemptions > 0)) {
        throw badRequest('maxRedemptions must be a positive whole number (or null for no limit).', { field: 'maxRedemptions' });
      }
      if (input.startsAt && input.endsAt && input.endsAt <= input.startsAt) throw badRequest('endsAt must be after startsAt.', { field: 'endsAt' });
      const now = clock.now();
      const row = await db.transaction(async (tx) => {
        const [inserted] = await tx
          .insert(coupons)
          .values({
            code,
            description: input.description ?? '',
            appliesTo: input.appliesTo ?? 'PLAN',
            planIds: input.planIds ?? [],
            discountType: input.discountType,
            percentOff: input.discountType === 'PERCENT' ? input.percentOff! : null,
            amountOffCents: input.discountType === 'FIXED' ? input.amountOffCents! : null,
            currency: input.discountType === 'FIXED' ? input.currency!.toUpperCase() : null,
            minOrderCents: input.minOrderCents ?? 0,
            startsAt: input.startsAt ?? null,
            endsAt: input.endsAt ?? null,
            maxRedemptions: input.maxRedemptions ?? null,
            createdAt: now,
            updatedAt: now,
          })
          .onConflictDoNothing({ target: coupons.code })
          .returning();
        if (!inserted) throw conflict(`A coupon with the code ${code} already exists.`, { field: 'code' });
        await audit?.({ action: 'coupon.create', targetType: 'coupon', targetId: inserted.id, before: null, after: couponView(inserted, now) }, tx);
        return inserted;
      });
      return row;
    },

    /** Operators' list, newest first, cursor-paged; `state` filters on what a customer would meet now. */
    async list(query: { limit: number; cursor?: string; state?: CouponState; code?: string }) {
      const now = clock.now();
      const filters: SQL[] = [];
      if (query.code) filters.push(eq(coupons.code, normalizeCode(query.code)));
      if (query.state === 'INACTIVE') filters.push(eq(coupons.active, false));
      if (query.state === 'EXPIRED') filters.push(eq(coupons.active, true), lte(coupons.endsAt, now));
      if (query.state === 'SCHEDULED') filters.push(eq(coupons.active, true), gt(coupons.startsAt, now));
      if (query.state === 'EXHAUSTED') filters.push(eq(coupons.active, true), sql`${coupons.redeemedCount} >= ${coupons.maxRedemptions}`);
      if (query.state === 'ACTIVE') {
        filters.push(
          eq(coupons.active, true),
          or(isNull(coupons.endsAt), gt(coupons.endsAt, now))!,
          or(isNull(coupons.startsAt), lte(coupons.startsAt, now))!,
          or(isNull(coupons.maxRedemptions), lt(coupons.redeemedCount, coupons.maxRedemptions))!,
        );
      }
      const page = await newestFirstPage(db, coupons, 'createdAt', filters.length > 0 ? and(...filters) : undefined, query);
      return { items: page.items.map((r) => couponView(r, now)), nextCursor: page.nextCursor };
    },

    async get(id: string) {
      const [row] = await db.select().from(coupons).where(eq(coupons.id, id));
      if (!row) throw notFound(`No coupon with id "${id}". See GET /v1/admin/coupons.`);
      return couponView(row, clock.now());
    },

    /**
     * Ends a coupon now: its end moves to this moment (never later than it was), so a customer gets the "expired"
     * answer; uses already reserved at checkout are kept. Expiring an expired coupon changes nothing and is not audited.
     */
    async expire(id: string, audit: AuditWriter, reason: string | null = null) {
      const now = clock.now();
      return db.transaction(async (tx) => {
        const [row] = await tx.select().from(coupons).where(eq(coupons.id, id)).for('update');
        if (!row) throw notFound(`No coupon with id "${id}". See GET /v1/admin/coupons.`);
        if (row.endsAt && row.endsAt <= now) return couponView(row, now);
        const [updated] = await tx.update(coupons).set({ endsAt: now, updatedAt: now }).where(eq(coupons.id, id)).returning();
        const after = couponView(updated!, now);
        await audit({ action: 'coupon.expire', targetType: 'coupon', targetId: id, before: couponView(row, now), after, reason }, tx);
        return after;
      });
    },

    async byCode(code: string) {
      return byCode(db, normalizeCode(code));
    },

    /**
     * Holds one use of the coupon for `changeId`, inside the checkout's transaction. The count moves by a
     * conditional update, so when one use is left and two checkouts race, one gets it and the other a 400.
     */
    async reserve(tx: DbOrTx, input: { coupon: CouponRow; userId: string; changeId: string; discountCents: number }): Promise<void> {
      const { coupon } = input;
      const now = clock.now();
      const [taken] = await tx
        .update(coupons)
        .set({ redeemedCount: sql`${coupons.redeemedCount} + 1`, updatedAt: now })
        .where(and(eq(coupons.id, coupon.id), or(isNull(coupons.maxRedemptions), lt(coupons.redeemedCount, coupons.maxRedemptions))))
        .returning({ id: coupons.id });
      if (!taken) throw refuse(coupon.code, 'FULLY_REDEEMED', `The code ${coupon.code} has been fully redeemed.`);
      const [held] = await tx
        .insert(couponRedemptions)
        .values({ couponId: coupon.id, userId: input.userId, changeId: input.changeId, discountCents: input.discountCents, createdAt: now, updatedAt: now })
        .onConflictDoNothing()
        .returning({ id: couponRedemptions.id });
      if (!held) throw refuse(coupon.code, 'ALREADY_USED', `You have already used the code ${coupon.code}.`);
    },

    /** The change was paid: its reserved use becomes a redemption. */
    async redeem(tx: DbOrTx, changeId: string): Promise<void> {
      await tx
        .update(couponRedemptions)
        .set({ status: 'REDEEMED', updatedAt: clock.now() })
        .where(and(eq(couponRedemptions.changeId, changeId), eq(couponRedemptions.status, 'RESERVED')));
    },

    /** The change was abandoned unpaid: its use goes back to the coupon (and the customer may use the code again). */
    async release(tx: DbOrTx, changeId: string): Promise<void> {
      const now = clock.now();
      const [released] = await tx
        .update(couponRedemptions)
        .set({ status: 'RELEASED', updatedAt: now })
        .where(and(eq(couponRedemptions.changeId, changeId), eq(couponRedemptions.status, 'RESERVED')))
        .returning({ couponId: couponRedemptions.couponId });
      if (released) {
        await tx
          .update(coupons)
          .set({ redeemedCount: sql`${coupons.redeemedCount} - 1`, updatedAt: now })
          .where(eq(coupons.id, released.couponId));
      }
    },
  };
}

export type CouponsService = ReturnType<typeof createCouponsService>;
