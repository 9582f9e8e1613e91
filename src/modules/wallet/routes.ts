import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { principalOf } from '../../platform/auth/plugin.js';
import { errorResponses } from '../../platform/http/schemas.js';
import type { LedgerRow } from './ledger.js';
import { Balance, BalanceWithoutTotals, EmptyQuery, RecentTransactions, TransactionsPage, TransactionsQuery } from './schemas.js';
import type { WalletService } from './service.js';

export interface WalletRoutesOptions {
  wallet: WalletService;
}

const RECENT_LIMIT = 50;

const toEntry = (row: LedgerRow) => ({
  id: row.id,
  kind: row.kind,
  amount: row.amount,
  note: row.note,
  paymentId: row.paymentId,
  requestId: row.requestId,
  createdAt: row.createdAt.toISOString(),
});

export const walletRoutes: FastifyPluginAsyncTypebox<WalletRoutesOptions> = async (app, { wallet }) => {
  const tags = ['wallet'];

  app.get(
    '/v1/credits/balance',
    {
      config: { auth: 'required' },
      schema: { tags, summary: 'Token balance with totals per ledger kind', querystring: EmptyQuery, response: { 200: Balance, ...errorResponses(400, 401) } },
    },
    async (request) => {
      const balance = await wallet.balance({ userId: principalOf(request).userId });
      return { ...balance, updatedAt: balance.updatedAt.toISOString() };
    },
  );

  app.get(
    '/v1/subscriptions/credits/balance',
    {
      config: { auth: 'required' },
      schema: {
        tags,
        summary: 'Token balance (without totals)',
        querystring: EmptyQuery,
        response: { 200: BalanceWithoutTotals, ...errorResponses(400, 401) },
      },
    },
    async (request) => {
      const { tokens, credits, tokensPerCredit, updatedAt, unpaidOverrunTokens } = await wallet.balance({ userId: principalOf(request).userId });
      return { tokens, credits, tokensPerCredit, unpaidOverrunTokens, updatedAt: updatedAt.toISOString() };
    },
  );

  app.get(
    '/v1/credits/transactions',
    {
      config: { auth: 'required' },
      schema: {
        tags,
        summary: 'Ledger entries, newest first (cursor-paged)',
        querystring: TransactionsQuery,
        response: { 200: TransactionsPage, ...errorResponses(400, 401) },
      },
    },
    async (request) => {
      const page = await wallet.transactions({ userId: principalOf(request).userId }, { limit: request.query.limit ?? 20, cursor: request.query.cursor });
      return { items: page.items.map(toEntry), nextCursor: page.nextCursor };
    },
  );

  app.get(
    '/v1/subscriptions/credits/transactions',
    {
      config: { auth: 'required' },
      schema: {
        tags,
        summary: 'The last 50 ledger entries, newest first',
        querystring: EmptyQuery,
        response: { 200: RecentTransactions, ...errorResponses(400, 401) },
      },
    },
    async (request) => {
      const page = await wallet.transactions({ userId: principalOf(request).userId }, { limit: RECENT_LIMIT });
      return { items: page.items.map(toEntry) };
    },
  );

  app.get(
    '/v1/subscriptions/credits/packs',
    {
      schema: {
        tags,
        summary: 'Fixed credit packs (off sale: always empty; use /v1/topup)',
        querystring: EmptyQuery,
        response: { 200: Type.Array(Type.Object({}, { additionalProperties: true }), { maxItems: 0 }), ...errorResponses(400) },
      },
    },
    async () => [],
  );
};
