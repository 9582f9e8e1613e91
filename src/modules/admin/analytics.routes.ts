import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ADMIN_ROUTE } from '../../platform/auth/roles.js';
import { DAY_MS, type Clock } from '../../platform/clock/clock.js';
import { badRequest } from '../../platform/http/errors.js';
import { errorResponses } from '../../platform/http/schemas.js';
import type { AuthService } from '../auth/index.js';
import type { PaymentsService } from '../payments/service.js';
import type { UsageService } from '../usage/service.js';
import { ANALYTICS_MAX_DAYS, RangeQuery, RevenueReport, UsageReport } from './analytics.schemas.js';

const dayOf = (at: Date) => at.toISOString().slice(0, 10);

/**
 * `/v1/admin/analytics/*`: revenue and usage per UTC day over a range of days. The playground's internal identity
 * (spec B: its runs are "excluded from revenue analytics") is left out of both.
 */
export const adminAnalyticsRoutes: FastifyPluginAsyncTypebox<{ auth: AuthService; payments: PaymentsService; usage: UsageService; clock: Clock }> = async (
  app,
  { auth, payments, usage, clock },
) => {
  const tags = ['admin'];

  /** The range as instants [from, to + 1 day), after checking it; and the accounts left out. */
  async function rangeOf(query: { from?: string; to?: string }) {
    const to = query.to ?? dayOf(clock.now());
    const from = query.from ?? dayOf(new Date(Date.parse(`${to}T00:00:00Z`) - 29 * DAY_MS));
    const start = Date.parse(`${from}T00:00:00Z`);
    const end = Date.parse(`${to}T00:00:00Z`) + DAY_MS;
    if (end <= start) throw badRequest('`from` must be on or before `to`.', { field: 'query.from' });
    if ((end - start) / DAY_MS > ANALYTICS_MAX_DAYS)
      throw badRequest(`A range covers at most ${ANALYTICS_MAX_DAYS} days. Ask for a shorter range.`, { field: 'query.to' });
    const playground = await auth.data.users.findInternal('PLAYGROUND');
    return {
      from,
      to,
      range: { from: new Date(start), to: new Date(end), excludeUserIds: playground ? [playground.id] : [] },
      excludedPlaygroundIdentity: playground !== undefined,
    };
  }

  app.get(
    '/v1/admin/analytics/revenue',
    {
      config: ADMIN_ROUTE,
      schema: {
        tags,
        summary: 'Revenue per UTC day: succeeded payments by channel, currency and kind (plans vs top-ups), with totals',
        querystring: RangeQuery,
        response: { 200: RevenueReport, ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => {
      const { range, ...window } = await rangeOf(request.query);
      const rows = await payments.revenueByDay(range);
      const totals = new Map<string, { currency: string; kind: string; payments: number; amountCents: number }>();
      for (const row of rows) {
        const key = `${row.currency}\u0000${row.kind}`;
        const total = totals.get(key) ?? { currency: row.currency, kind: row.kind, payments: 0, amountCents: 0 };
        total.payments += row.payments;
        total.amountCents += row.amountCents;
        totals.set(key, total);
      }
      return { ...window, rows, totals: [...totals.values()] };
    },
  );

  app.get(
    '/v1/admin/analytics/usage',
    {
      config: ADMIN_ROUTE,
      schema: {
        tags,
        summary: 'Usage per UTC day: calls, tokens charged and provider cost by provider and model, with totals',
        querystring: RangeQuery,
        response: { 200: UsageReport, ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => {
      const { range, ...window } = await rangeOf(request.query);
      const rows = await usage.dailyTotals(range);
      const totals = { calls: 0, failedCalls: 0, tokens: 0, providerCostCents: 0 };
      for (const row of rows) {
        totals.calls += row.calls;
        totals.failedCalls += row.failedCalls;
        totals.tokens += row.tokens;
        totals.providerCostCents += row.providerCostCents;
      }
      return { ...window, rows, totals };
    },
  );
};
