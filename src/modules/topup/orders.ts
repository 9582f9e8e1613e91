import { and, eq, isNotNull, sql } from 'drizzle-orm';
import { topUpOrders } from '../../db/schema/topup.js';
import type { Clock } from '../../platform/clock/clock.js';
import type { Db, Tx } from '../../platform/db/database.js';
import { AppError, badRequest, notFound } from '../../platform/http/errors.js';
import { newestFirstPage } from '../../platform/http/pagination.js';
import { formatMoney, type AppliedRule, type Quote, type QuoteLine, type RuleUsage } from './engine/index.js';

export type OrderRow = typeof topUpOrders.$inferSelect;

export interface PaymentSummary {
  id: string;
  status: string;
  provider: string;
  paidAt: string | null;
}

/** What the top-ups module needs from payments and the wallet (wired in src/services.ts). */
export interface OrderPorts {
  openPayment(input: {
    userId: string;
    orderId: string;
    amountCents: number;
    currency: string;
    channel: string;
    extra?: Record<string, unknown> | undefined;
    successUrl?: string | undefined;
    cancelUrl?: string | undefined;
    description: string;
  }): Promise<{ paymentId: string; redirectUrl: string }>;
  paymentOf(userId: string, paymentId: string): Promise<PaymentSummary>;
  creditWallet(
    tx: Tx,
    input: { userId: string; kind: 'PURCHASE' | 'PROMO'; amount: number; idempotencyKey: string; paymentId: string; note: string },
  ): Promise<void>;
}

export interface PlaceOrderInput {
  selection: Record<string, number>;
  provider: string;
  extra?: Record<string, unknown> | undefined;
  expectedAmountCents?: number | undefined;
  couponCode?: string | undefined;
  successUrl?: string | undefined;
  cancelUrl?: string | undefined;
}

export interface ConfirmedTopUpPayment {
  id: string;
  userId: string;
  purpose: Record<string, unknown> & { kind: string };
}

export type FulfilResult = { status: 'fulfilled' | 'already_fulfilled' } | { status: 'unfulfillable'; reason: string };

/** An order as the customer and the admin see it; its status is its payment's (PENDING before one is opened). */
export function orderViewOf(row: OrderRow, payment: PaymentSummary | null) {
  return {
    id: row.id,
    status: payment?.status ?? 'PENDING',
    selection: row.selection,
    lines: row.lines as unknown as QuoteLine[],
    appliedRules: row.appliedRules as unknown as AppliedRule[],
    subtotalCents: row.subtotalCents,
    discountCents: row.discountCents,
    amountCents: row.amountCents,
    currency: row.currency,
    tokens: row.tokens,
    bonusTokens: row.bonusTokens,
    totalTokens: row.totalTokens,
    channel: row.channel,
    payment,
    tokensGranted: row.tokensGranted,
    createdAt: row.createdAt.toISOString(),
  };
}

export function createOrders(deps: {
  db: Db;
  clock: Clock;
  ports: OrderPorts;
  quote: (userId: string, selection: Record<string, number>, channel: string) => Promise<Quote>;
}) {
  const { db, clock, ports } = deps;

  async function view(row: OrderRow) {
    return orderViewOf(row, row.paymentId ? await ports.paymentOf(row.userId, row.paymentId) : null);
  }

  return {
    /** Paid orders that used each rule: in all, and by `userId` (rule usage limits count paid orders). */
    async ruleUsage(userId: string | null): Promise<Record<string, RuleUsage>> {
      const result: unknown = await db.execute(sql`
        SELECT applied->>'id' AS rule_id, count(*)::int AS total,
               count(*) FILTER (WHERE ${topUpOrders.userId} = ${userId})::int AS by_customer
        FROM ${topUpOrders}, jsonb_array_elements(${topUpOrders.appliedRules}) AS applied
        WHERE ${topUpOrders.grantedAt} IS NOT NULL
        GROUP BY 1`);
      const rows = (result as { rows: { rule_id: string; total: number; by_customer: number }[] }).rows; // both drivers answer raw SQL with `{ rows }`
      return Object.fromEntries(rows.map((r) => [r.rule_id, { total: Number(r.total), byCustomer: Number(r.by_customer) }]));
    },

    async paidOrders(userId: string): Promise<number> {
      const [row] = await db
        .select({ n: sql<number>`count(*)::int` })
        .from(topUpOrders)
        .where(and(eq(topUpOrders.userId, userId), isNotNull(topUpOrders.grantedAt)));
      return Number(row?.n ?? 0);
    },

    /** `POST /v1/topup/orders`: prices again (rule 2), refuses what rule 3 lists, records the order and opens the checkout. */
    async place(userId: string, input: PlaceOrderInput) {
      if (input.couponCode !== undefined) throw badRequest('Top-ups take no coupon code. Remove it and place the order again.');
      const quote = await deps.quote(userId, input.selection, input.provider);
      const off = quote.issues.find((issue) => issue.field === 'enabled');
      if (off) throw badRequest(off.message);
      if (!quote.valid)
        throw badRequest(`This top-up cannot be ordered: ${quote.issues[0]?.message ?? 'the selection is not valid.'}`, { issues: quote.issues });
      if (input.expectedAmountCents !== undefined && input.expectedAmountCents !== quote.amountCents) {
        throw new AppError(
          409,
          'PRICE_CHANGED',
          `The price of this top-up is now ${formatMoney(quote.amountCents, quote.currency)}. Check the new total and place the order again.`,
          {
            amountCents: quote.amountCents,
            totalTokens: quote.totalTokens,
          },
        );
      }
      if (!quote.payableWith.includes(input.provider)) {
        const reason = quote.unavailableChannels.find((c) => c.slug === input.provider)?.reason ?? `${input.provider} is not available right now.`;
        throw badRequest(reason, { provider: input.provider, payableWith: quote.payableWith });
      }
      const [order] = await db
        .insert(topUpOrders)
        .values({
          userId,
          selection: Object.fromEntries(quote.lines.map((line) => [line.key, line.units])),
          lines: quote.lines as unknown as Record<string, unknown>[],
          appliedRules: quote.applied as unknown as Record<string, unknown>[],
          subtotalCents: quote.subtotalCents,
          discountCents: quote.discountCents,
          amountCents: quote.amountCents,
          currency: quote.currency,
          tokens: quote.tokens,
          bonusTokens: quote.bonusTokens,
          totalTokens: quote.totalTokens,
          channel: input.provider,
          createdAt: clock.now(),
        })
        .returning();
      const orderId = order!.id;
      let opened: { paymentId: string; redirectUrl: string };
      try {
        opened = await ports.openPayment({
          userId,
          orderId,
          amountCents: quote.amountCents,
          currency: quote.currency,
          channel: input.provider,
          extra: input.extra,
          successUrl: input.successUrl,
          cancelUrl: input.cancelUrl,
          description: `Top-up: ${quote.totalCredits.toLocaleString('en-US')} credits`,
        });
      } catch (err) {
        await db.delete(topUpOrders).where(eq(topUpOrders.id, orderId)); // nothing was opened: no order either
        throw err;
      }
      await db.update(topUpOrders).set({ paymentId: opened.paymentId }).where(eq(topUpOrders.id, orderId));
      return {
        orderId,
        paymentId: opened.paymentId,
        redirectUrl: opened.redirectUrl,
        amountCents: quote.amountCents,
        tokens: quote.tokens,
        bonusTokens: quote.bonusTokens,
        totalTokens: quote.totalTokens,
      };
    },

    async get(userId: string, orderId: string) {
      const [row] = await db
        .select()
        .from(topUpOrders)
        .where(and(eq(topUpOrders.id, orderId), eq(topUpOrders.userId, userId)));
      if (!row) throw notFound('No top-up order with this id on your account.');
      return view(row);
    },

    async list(userId: string, page: { limit: number; cursor?: string | undefined }) {
      const cut = await newestFirstPage(db, topUpOrders, 'createdAt', eq(topUpOrders.userId, userId), page);
      return { items: await Promise.all(cut.items.map(view)), nextCursor: cut.nextCursor };
    },

    /**
     * The `topup` fulfilment, run by payments in the confirming transaction: grants the order's tokens (PURCHASE) and
     * bonus (PROMO) exactly once, fixed as they were when the order was placed.
     */
    async fulfil(tx: Tx, payment: ConfirmedTopUpPayment): Promise<FulfilResult> {
      const orderId = typeof payment.purpose.orderId === 'string' ? payment.purpose.orderId : null;
      const [order] = orderId ? await tx.select().from(topUpOrders).where(eq(topUpOrders.id, orderId)).for('update') : [];
      if (!order || order.userId !== payment.userId) return { status: 'unfulfillable', reason: 'no top-up order for this payment' };
      if (order.grantedAt) return { status: 'already_fulfilled' };
      const base = { userId: order.userId, paymentId: payment.id };
      await ports.creditWallet(tx, {
        ...base,
        kind: 'PURCHASE',
        amount: order.tokens,
        idempotencyKey: `topup:${order.id}:purchase`,
        note: `Top-up ${order.id}`,
      });
      if (order.bonusTokens > 0) {
        await ports.creditWallet(tx, {
          ...base,
          kind: 'PROMO',
          amount: order.bonusTokens,
          idempotencyKey: `topup:${order.id}:bonus`,
          note: `Top-up ${order.id} bonus`,
        });
      }
      await tx.update(topUpOrders).set({ grantedAt: clock.now(), tokensGranted: order.totalTokens }).where(eq(topUpOrders.id, order.id));
      return { status: 'fulfilled' };
    },
  };
}
